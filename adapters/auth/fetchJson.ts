// One request to an authorization server (its metadata, its keys, its introspection endpoint),
// bounded in time and size: what an authenticator waits for while a client waits for its answer.

/** Largest answer read from an authorization server: 1 MiB (a JWKS of a few keys is a few KiB). */
const MAX_ANSWER_BYTES = 1_048_576;

/** Why an authorization server's answer could not be had (its message names no token). @internal */
export class FetchFailure extends Error {
  override readonly name = 'FetchFailure';
}

/**
 * GETs (or POSTs, with `init`) `url` and parses its JSON object, giving up after `timeout`
 * milliseconds, or when `deadline` (several requests' one timeout) aborts. No redirect is followed
 * (an authorization server's endpoints are named exactly).
 * @throws FetchFailure on a timeout, a network error, a status other than 200, more than 1 MiB, or
 *   anything but a JSON object.
 * @internal
 */
export async function fetchJson(
  url: string,
  timeout: number,
  init: { readonly method?: 'POST'; readonly headers?: Record<string, string>; readonly body?: string; readonly deadline?: AbortSignal } = {},
): Promise<Record<string, unknown>> {
  const signal = init.deadline ?? AbortSignal.timeout(timeout);
  let response: Response;
  try {
    response = await fetch(url, {
      ...(init.method === undefined ? {} : { method: init.method, body: init.body }),
      redirect: 'manual',
      signal,
      headers: { accept: 'application/json', ...init.headers },
    });
  } catch (error) {
    throw new FetchFailure(signal.aborted ? `${url} did not answer within ${timeout} ms` : `${url} could not be reached (${causeOf(error)})`);
  }
  try {
    if (response.status !== 200) throw new FetchFailure(`${url} answered HTTP ${response.status}`);
    const length = Number(response.headers.get('content-length') ?? 0);
    if (length > MAX_ANSWER_BYTES) throw new FetchFailure(`${url} answered more than ${MAX_ANSWER_BYTES} bytes`);
    const text = await response.text();
    if (text.length > MAX_ANSWER_BYTES) throw new FetchFailure(`${url} answered more than ${MAX_ANSWER_BYTES} bytes`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new FetchFailure(`${url} answered something that is not JSON`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new FetchFailure(`${url} answered JSON that is not an object`);
    return value as Record<string, unknown>;
  } catch (error) {
    if (error instanceof FetchFailure) throw error;
    throw new FetchFailure(signal.aborted ? `${url} did not answer within ${timeout} ms` : `${url} failed (${causeOf(error)})`);
  } finally {
    // A body not read (a refused status) holds its connection until it is.
    if (!response.bodyUsed) void response.body?.cancel().catch(() => {});
  }
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  return error instanceof Error ? error.message : String(error);
}
