// What every peer's server shares: the one URI the streams subscribe to, the request body reader
// for the hand-written servers, and the frame bytes a correct listen stream writes.
export const URI = 'file:///srv/bench/project/config.json';
/**
 * The URIs a stream or session subscribes to (the first `uris` of them, bench/run.mjs --uris):
 * a publish pattern of several notifications per turn rotates over them, so that no two in one
 * turn are identical (a server may rightly collapse identical pending notifications into one).
 */
export const uris = (count) => Array.from({ length: count }, (_, i) => (i === 0 ? URI : `file:///srv/bench/project/file-${i}.json`));
export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

export const SSE_HEADERS = Object.freeze({
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
});

/** Reads a JSON request body (the hand-written peers have no framework to do it). */
export function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error);
      }
    });
    req.on('error', reject);
  });
}

/** The honoured filter: the bench only ever asks for one URI and tools/list_changed. */
export function honoured(params) {
  const asked = params?.notifications ?? {};
  const out = {};
  if (asked.toolsListChanged === true) out.toolsListChanged = true;
  if (Array.isArray(asked.resourceSubscriptions) && asked.resourceSubscriptions.length > 0) {
    out.resourceSubscriptions = [...new Set(asked.resourceSubscriptions)];
  }
  return out;
}

/**
 * A listen request of the hand-written peers: its message and its honoured filter; `undefined`
 * once a body that is not JSON has been answered 400.
 */
export async function readListen(req, res) {
  let message;
  try {
    message = await readJson(req);
  } catch {
    res.writeHead(400).end();
    return undefined;
  }
  return { message, filter: honoured(message.params) };
}

/** The streams of the hand-written listen peers: all of them, those of tools/list_changed, those of each URI. */
export class StreamSets {
  all = new Set();
  tools = new Set();
  byUri = new Map();

  /** Files `stream` under what `filter` asks for, until `res` closes. */
  add(stream, filter, res) {
    const sets = [this.all];
    if (filter.toolsListChanged) sets.push(this.tools);
    for (const uri of filter.resourceSubscriptions ?? []) {
      let set = this.byUri.get(uri);
      if (set === undefined) this.byUri.set(uri, (set = new Set()));
      sets.push(set);
    }
    for (const set of sets) set.add(stream);
    res.on('close', () => {
      for (const set of sets) set.delete(stream);
      for (const uri of filter.resourceSubscriptions ?? []) if (this.byUri.get(uri)?.size === 0) this.byUri.delete(uri);
    });
  }
}
