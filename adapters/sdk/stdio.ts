// This library in front of an official SDK 2.x server on stdio: the stdio counterpart of
// `sdkRouter`. One stdin/stdout pair; `subscriptions/listen` (and its cancellations) go to an
// McpEndpoint's channel session, everything else to the SDK server through a transport of its shape.
// Nothing here loads the SDK.
import type { Readable, Writable } from 'node:stream';
import { Observable, Subject } from 'rxjs';
import type { AuthInfo } from '../../lib/auth.js';
import { callback, endpoint as validEndpoint, options as validOptions } from '../../lib/validate.js';
import { channelAuth } from '../channel/check.js';
import { reportError } from '../../lib/telemetry.js';
import type { ChannelInput, MessageChannel } from '../channel/channel.js';
import { channelTransport, type SdkTransport } from '../channel/pair.js';
import { type ChannelSession, serveChannel } from '../channel/session.js';
import { stdioChannel } from '../channel/stdio.js';
import type { McpEndpoint } from '../http/endpoint.js';

/** Options of {@link sdkStdio}. */
export interface SdkStdioOptions {
  /** Serves `subscriptions/listen`: an endpoint on the hub the SDK server's changes are published on (`HubEventBus`). */
  readonly endpoint: McpEndpoint;
  /**
   * Connects the SDK server to the transport it is given (called once, at once): with
   * `@modelcontextprotocol/server` 2.x, `(transport) => serveStdio(factory, { transport })`, which
   * serves `server/discover`, `initialize` and every other request of both eras.
   */
  readonly connect: (transport: SdkTransport) => unknown;
  /** Defaults to `process.stdin`. */
  readonly input?: Readable;
  /** Defaults to `process.stdout`; nothing else may write to it. */
  readonly output?: Writable;
  /** The host's principal for the listens (see `serveStdio`); default `{ principal: 'stdio' }`. */
  readonly auth?: AuthInfo | (() => AuthInfo | Promise<AuthInfo>);
}

/** What {@link sdkStdio} runs. */
export interface SdkStdio {
  /** The endpoint's session on the pipe (the listens); `closed` resolves when stdin ends. */
  readonly session: ChannelSession;
  /** The transport handed to the SDK server. */
  readonly transport: SdkTransport;
}

const STDIO_AUTH: AuthInfo = Object.freeze({ principal: 'stdio', scopes: new Set<string>() });

/**
 * Serves one stdin/stdout pair with two servers, as `sdkRouter` does one HTTP path:
 * `subscriptions/listen` by this library's {@link McpEndpoint} (the bounded queues, coalescing,
 * the per-principal and server-wide caps, lifetime and idle closes), every other message by an
 * official SDK 2.x server (`server/discover`, `initialize`, tools, resources, prompts, both eras).
 * A `notifications/cancelled` goes to both (each ignores an id it does not know). A line that is not
 * a JSON-RPC message is answered by the endpoint, as any channel answers it.
 *
 * The SDK's stdio listen router is not used: a tool that changes what is listed tells the hub,
 * through `HubEventBus` (`bus.publish({ kind: 'tools_list_changed' })`) or `hub.notify*()`, and every
 * listen that asked for it hears it. Give the endpoint the capabilities the SDK server advertises.
 *
 * @example
 * import { McpServer } from '@modelcontextprotocol/server';
 * import { serveStdio } from '@modelcontextprotocol/server/stdio';
 * const hub = new Hub();
 * const bus = new HubEventBus(hub);
 * const factory = () => {
 *   const server = new McpServer({ name: 'notes', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
 *   server.registerTool('touch', { description: 'says the tools changed' }, async () => {
 *     bus.publish({ kind: 'tools_list_changed' });
 *     return { content: [] };
 *   });
 *   return server;
 * };
 * sdkStdio({ endpoint: new McpEndpoint({ hub, capabilities: { tools: true } }), connect: (transport) => serveStdio(factory, { transport }) });
 * @param options the endpoint, how to connect the SDK server, the streams.
 * @throws InvalidOptionError without an endpoint or `connect`.
 * @see sdkRouter
 */
export function sdkStdio(options: SdkStdioOptions): SdkStdio {
  validOptions('sdkStdio options', options, ['endpoint', 'connect', 'input', 'output', 'auth'], { like: '{ endpoint, connect }' });
  const { endpoint, connect, input, output, auth = STDIO_AUTH } = options;
  validEndpoint<McpEndpoint>('endpoint', endpoint);
  callback('connect', connect);
  if (options.auth !== undefined) channelAuth('auth', options.auth);
  const pipe = stdioChannel({ ...(input === undefined ? {} : { input }), ...(output === undefined ? {} : { output }), maxMessageBytes: endpoint.maxBodyBytes });
  const ours = new Inbox();
  const theirs = new Inbox();
  const view = (inbox: Inbox): MessageChannel => ({ incoming: inbox.messages, send: (json) => pipe.send(json), drain$: pipe.drain$, close: () => pipe.close() });
  pipe.incoming.subscribe({
    next: (message) => {
      const parsed = parse(message);
      if (parsed === undefined) return ours.next(message);
      const method = (parsed.value as { method?: unknown }).method;
      if (method === 'subscriptions/listen') return ours.next(parsed);
      if (method === 'notifications/cancelled') ours.next(parsed);
      theirs.next(parsed);
    },
    error: (error: unknown) => {
      reportError('adapter', error);
      ours.complete();
      theirs.complete();
    },
    complete: () => {
      ours.complete();
      theirs.complete();
    },
  });
  const session = serveChannel(endpoint, view(ours), { auth });
  const transport = channelTransport(view(theirs));
  connect(transport);
  return { session, transport };
}

/** The JSON of a message, when it is one JSON object (anything else goes to the endpoint, which answers it). */
function parse(message: ChannelInput): { readonly parsed: unknown; readonly value: object } | undefined {
  if (!(message instanceof Uint8Array)) return undefined;
  try {
    const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(message));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? { parsed: value, value } : undefined;
  } catch {
    return undefined;
  }
}

/** Messages for one side, held until that side subscribes (the SDK starts its transport when it connects). */
class Inbox {
  readonly #subject = new Subject<ChannelInput>();
  #held: ChannelInput[] | undefined = [];
  #completed = false;
  readonly messages = new Observable<ChannelInput>((subscriber) => {
    const subscription = this.#subject.subscribe(subscriber);
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const message of held) subscriber.next(message);
    if (this.#completed) subscriber.complete();
    return subscription;
  });

  next(message: ChannelInput): void {
    if (this.#held !== undefined) this.#held.push(message);
    else this.#subject.next(message);
  }

  complete(): void {
    this.#completed = true;
    this.#subject.complete();
  }
}
