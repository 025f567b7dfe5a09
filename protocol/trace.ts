// A listen request's W3C trace context on `channels.trace`: taken from the request when someone
// subscribes there, published as the request is admitted or refused, and as its stream starts and
// stops (see `mcp-rx-streams/otel`).
import type { EndpointRequest } from '../lib/context.js';
import { Refusal } from '../lib/refusal.js';
import { ErrorCode } from '../lib/jsonrpc.js';
import { reportTrace, type ListenTrace, type StopReason } from '../lib/telemetry.js';
import { filterNames } from '../lib/filter.js';
import type { ListenStatus } from '../operators/listenPipeline.js';
import type { StreamWatcher } from '../operators/streamTelemetry.js';
import type { Answer } from './answer.js';

/** Longest trace header value taken, in characters (a `traceparent` is 55; `tracestate` at most 512 by W3C). */
const MAX_TRACE_HEADER = 1024;

/**
 * The trace context of a listen request: `params._meta.traceparent` (and `tracestate`) when the
 * client set them (MCP carries request metadata there, whatever the transport), else the
 * `traceparent` / `tracestate` HTTP headers. Values that are not strings of at most 1024
 * characters are left out. @internal
 */
export function listenTrace(request: EndpointRequest, params: Readonly<Record<string, unknown>> | undefined, transport: ListenTrace['transport']): ListenTrace {
  const meta = params?._meta;
  if (meta !== null && typeof meta === 'object') {
    const { traceparent, tracestate } = meta as Record<string, unknown>;
    if (isTraceValue(traceparent)) return { traceparent, tracestate: isTraceValue(tracestate) ? tracestate : undefined, transport };
  }
  const traceparent = request.header('traceparent');
  if (!isTraceValue(traceparent)) return { traceparent: undefined, tracestate: undefined, transport };
  const tracestate = request.header('tracestate');
  return { traceparent, tracestate: isTraceValue(tracestate) ? tracestate : undefined, transport };
}

function isTraceValue(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_TRACE_HEADER;
}

/**
 * Runs the admission of a traced listen: `admission` first, then `refused` (with the refusal's
 * kind, if it was one, and the JSON-RPC code) when the answer is no stream; a stream's `start` and
 * `stop` come from its own watcher. @internal
 */
export async function traced(listen: ListenTrace, admit: () => Promise<Answer>): Promise<Answer> {
  reportTrace({ phase: 'admission', listen });
  let answer: Answer;
  try {
    answer = await admit();
  } catch (error) {
    // A refusal keeps its kind; anything else is answered -32603.
    if (error instanceof Refusal) reportTrace({ phase: 'refused', listen, refusal: error.kind, code: error.rpc.code });
    else reportTrace({ phase: 'refused', listen, refusal: undefined, code: ErrorCode.InternalError });
    throw error;
  }
  if (answer.kind === 'error') reportTrace({ phase: 'refused', listen, refusal: answer.refusal, code: answer.error.code });
  return answer;
}

/** The watcher of a traced listen that keeps no entry (one completed at once, `emptyListen: 'complete'`). @internal */
export function traceWatcher(listen: ListenTrace): StreamWatcher<ListenStatus> {
  return {
    watch: () => undefined,
    started: (status) => traceStart(listen, status),
    stopped: (status, reason, duration) => traceStop(listen, status, reason, duration),
  };
}

/** Publishes the `start` of a traced listen's stream. @internal */
export function traceStart(listen: ListenTrace, status: ListenStatus): void {
  const { filter } = status;
  reportTrace({ phase: 'start', listen, event: { era: 'modern', systemTime: status.openedAt(), resourceSubscriptions: filter.resourceSubscriptions?.length ?? 0, filters: filterNames(filter) } });
}

/** Publishes the `stop` of a traced listen's stream. @internal */
export function traceStop(listen: ListenTrace, status: ListenStatus, reason: StopReason, duration: number): void {
  reportTrace({ phase: 'stop', listen, event: { era: 'modern', duration, filters: filterNames(status.filter), reason } });
}

/** Publishes that a traced listen's client left before its stream opened. @internal */
export function traceAbandoned(listen: ListenTrace): void {
  reportTrace({ phase: 'abandoned', listen });
}
