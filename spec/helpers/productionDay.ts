// What spec/redis/production-day.spec.ts (issue 31, "Done when") drives black-box: `serve --workers 2
// --redis …` machines as child processes, a non-sticky round-robin HTTP proxy in front of them, a
// file that keeps changing, and three clients that each say what they heard and when: the official
// 1.x client (legacy session, GET stream, resources/subscribe), the official 2.x client (listen,
// opened again by the application whenever it ends) and a raw legacy client that reads the SSE
// event ids itself and reconnects with Last-Event-ID.
//
// What "heard" means here (docs/fleet.md, docs/cluster.md; a legacy `resources/updated` carries no
// payload, so a client re-reads the resource when it hears one): every client re-reads the file
// after each update it gets (the 2.x client also after each listen is acknowledged: a new listen
// has no replay, its client re-reads, docs/interop-notes.md "There is no automatic re-listen"). A
// write is heard by a client once the client got such a trigger after the write and its re-read
// answered that write's content (or a later one).
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { CLI } from './cli.js';
import { INIT_HEADERS, rpcBody, send, sessionHeaders, sleep } from './legacy.js';

// ---------------------------------------------------------------------------------------------
// The proxy

/**
 * A non-sticky round-robin reverse proxy on 127.0.0.1: each request goes to the next upstream in
 * turn (a client's POSTs and its GET land on different machines), with `X-Forwarded-For`; the
 * response is streamed back chunk by chunk as it arrives (SSE included). A request whose upstream
 * refuses the connection (a machine that is down) goes to the next one, as a load balancer's
 * passive health check does; nothing is retried once it reached an upstream. `cutAll()` ends every
 * exchange in flight abruptly, on both sides (a proxy restart, an idle timeout on every stream).
 */
export class RoundRobinProxy {
  /** Requests; retried on another upstream (refused); exchanges cut by {@link cutAll}; answered 502 (their upstream failed before answering), by error code. */
  readonly stats = { requests: 0, retried: 0, cut: 0, failed: {} as Record<string, number> };
  #next = 0;
  readonly #live = new Set<() => void>();
  readonly #sockets = new Set<Socket>();

  private constructor(
    readonly server: http.Server,
    /** `host:port` of each upstream, in turn; a test may change them. */
    readonly upstreams: { host: string; port: number }[],
  ) {}

  static async start(upstreams: { host: string; port: number }[]): Promise<RoundRobinProxy> {
    const server = http.createServer();
    const proxy = new RoundRobinProxy(server, upstreams);
    server.on('request', (req, res) => proxy.#handle(req, res));
    server.on('connection', (socket: Socket) => {
      proxy.#sockets.add(socket);
      socket.once('close', () => proxy.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/mcp`;
  }

  /** Ends every exchange in flight (both its connections); returns how many. */
  cutAll(): number {
    const cuts = [...this.#live];
    for (const cut of cuts) cut();
    this.stats.cut += cuts.length;
    return cuts.length;
  }

  async close(): Promise<void> {
    for (const cut of [...this.#live]) cut();
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.stats.requests++;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => undefined);
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = { ...req.headers };
      delete headers.connection;
      delete headers['keep-alive'];
      const from = req.socket.remoteAddress ?? '127.0.0.1';
      headers['x-forwarded-for'] = typeof headers['x-forwarded-for'] === 'string' ? `${headers['x-forwarded-for']}, ${from}` : from;
      this.#forward(req, res, headers, body, 0);
    });
  }

  #forward(req: http.IncomingMessage, res: http.ServerResponse, headers: http.OutgoingHttpHeaders, body: Buffer, attempt: number): void {
    const upstream = this.upstreams[this.#next++ % this.upstreams.length]!;
    let answered = false;
    const out = http.request({ host: upstream.host, port: upstream.port, method: req.method, path: req.url, headers, agent: false });
    const cut = () => {
      this.#live.delete(cut);
      out.destroy();
      res.destroy();
    };
    this.#live.add(cut);
    res.once('close', () => {
      this.#live.delete(cut);
      if (!res.writableFinished) out.destroy(); // the client went away
    });
    out.on('error', (error: NodeJS.ErrnoException) => {
      this.#live.delete(cut);
      if (answered) return res.destroy();
      if (error.code === 'ECONNREFUSED' && attempt + 1 < this.upstreams.length * 2 && !res.destroyed) {
        this.stats.retried++;
        return this.#forward(req, res, headers, body, attempt + 1);
      }
      const code = error.code ?? error.message;
      this.stats.failed[code] = (this.stats.failed[code] ?? 0) + 1;
      if (!res.headersSent && !res.destroyed) res.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy: ${error.code ?? error.message}`);
      else res.destroy();
    });
    out.on('response', (upstreamRes) => {
      answered = true;
      res.writeHead(upstreamRes.statusCode!, upstreamRes.statusMessage, upstreamRes.headers);
      res.flushHeaders();
      upstreamRes.on('data', (chunk: Buffer) => res.write(chunk));
      upstreamRes.on('end', () => {
        this.#live.delete(cut);
        res.end();
      });
      upstreamRes.on('error', () => undefined);
      // Cut upstream (a worker killed, a machine gone): the client's response is cut too, not ended.
      upstreamRes.on('close', () => {
        if (!upstreamRes.complete) cut();
      });
    });
    out.end(body);
  }
}

// ---------------------------------------------------------------------------------------------
// A machine: `serve --workers 2 --redis …`

/** One `serve --workers N` process (a machine): its output, its workers, its exit. */
export class ServeMachine {
  out = '';
  err = '';
  readonly exited: Promise<number | null>;
  readonly child: ChildProcess;
  readonly started = Date.now();

  constructor(
    readonly name: string,
    args: readonly string[],
  ) {
    this.child = spawn(process.execPath, [CLI, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.out += chunk));
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.err += chunk));
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  /** Resolves with its URL once it printed its ready line and connected to Redis. */
  async ready(ms: number): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      const url = /^mcp-rx-streams listening on (\S+)$/m.exec(this.out)?.[1];
      if (url !== undefined && /connected to Redis at /.test(this.err)) return url;
      if (this.child.exitCode !== null) throw new Error(`machine ${this.name} exited ${this.child.exitCode} before it was ready:\n${this.out}${this.err}`);
      if (Date.now() > deadline) throw new Error(`machine ${this.name} not ready within ${ms} ms:\n${this.out}${this.err}`);
      await sleep(20);
    }
  }

  /** The pid of each worker, by id, as its latest `cluster: worker N (pid P) listening` line says. */
  workers(): Map<number, number> {
    const workers = new Map<number, number>();
    for (const match of this.err.matchAll(/cluster: worker (\d+) \(pid (\d+)\) listening/g)) workers.set(Number(match[1]), Number(match[2]));
    return workers;
  }

  /** The workers alive now (listening, not exited since), by id, with their pids. */
  liveWorkers(): Map<number, number> {
    const workers = this.workers();
    for (const match of this.err.matchAll(/cluster: worker (\d+) \(pid (\d+)\) exited/g)) workers.delete(Number(match[1]));
    return workers;
  }

  /** Streams (listen or legacy GET) worker `id` holds open, per its `stream opened` and `stream closed` lines. */
  openStreams(id: number): number {
    const count = (what: string) => this.err.split(`worker ${id}: stream ${what}`).length - 1;
    return count('opened') - count('closed');
  }

  /** The id of the worker that watches the folder now, per the latest line saying so (undefined: none). */
  watcher(): number | undefined {
    const lines = [...this.err.matchAll(/cluster: (?:worker (\d+)|no worker) watches the folder/g)];
    const last = lines.at(-1);
    return last?.[1] === undefined ? undefined : Number(last[1]);
  }

  /** The lines of its log that match `pattern`. */
  lines(pattern: RegExp): string[] {
    return this.err.split('\n').filter((line) => pattern.test(line));
  }

  /** SIGTERM; resolves with its exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }

  /** SIGKILL (cleanup after a failed test). */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

// ---------------------------------------------------------------------------------------------
// The writer

/** A write of the file: its version (1, 2, …) and when it was done. */
export interface Write {
  readonly version: number;
  readonly at: number;
}

/** Content of version `n` of the file. */
export const contentOf = (n: number): string => `version ${n}\n`;
const versionOf = (text: string | undefined): number => Number(/^version (\d+)$/m.exec(text ?? '')?.[1] ?? -1);

/** Writes a new version of `file` every `every` ms while running. */
export class Writer {
  readonly writes: Write[] = [];
  #running: Promise<void> | undefined;
  #stop = false;

  constructor(
    readonly file: string,
    readonly every = 250,
  ) {}

  get last(): Write {
    return this.writes.at(-1)!;
  }

  /** Writes one version now. */
  async write(): Promise<Write> {
    const version = this.writes.length + 1;
    await writeFile(this.file, contentOf(version));
    const write = { version, at: Date.now() };
    this.writes.push(write);
    return write;
  }

  start(): void {
    this.#stop = false;
    this.#running ??= (async () => {
      while (!this.#stop) {
        await this.write();
        await sleep(this.every);
      }
    })();
  }

  /** Stops writing; resolves once the last write is done. */
  async stop(): Promise<void> {
    this.#stop = true;
    await this.#running;
    this.#running = undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The clients

/** A read of the file by a client: what triggered it (an update, an ack), when, and what it read. */
export interface Read {
  readonly triggeredAt: number;
  readonly version: number;
}

/** A legacy frame as a client saw it on a GET stream. */
export interface SeenFrame {
  readonly id: number;
  readonly method: string;
  readonly uri: string | undefined;
  readonly at: number;
  /** Which GET (0: the first, then each reconnect). */
  readonly connection: number;
  /** Arrived within REPLAY_MS of its stream's priming event, on a stream resumed with Last-Event-ID: written from the log. */
  readonly replayed: boolean;
}

const REPLAY_MS = 30;

/**
 * What every client shares: the times it got an update (or another trigger), the reads those
 * triggered (one at a time: triggers during a read make one more read after it), its reconnects.
 */
export abstract class ObservingClient {
  readonly updates: number[] = [];
  readonly triggers: number[] = [];
  readonly reads: Read[] = [];
  readonly errors: string[] = [];
  reconnects = 0;
  #reading = false;
  #again: number | undefined;
  closed = false;

  /** Made by a subclass's `connect`: `name` in the report, `uri` the file it follows. */
  constructor(
    readonly name: string,
    readonly uri: string,
  ) {}

  /** Reads the file's current content (its text). */
  protected abstract readText(): Promise<string | undefined>;

  /** An update of the file arrived. */
  protected heardUpdate(): void {
    const at = Date.now();
    this.updates.push(at);
    this.trigger(at);
  }

  /** Something that makes the client re-read (an update, a new listen's ack). */
  protected trigger(at = Date.now()): void {
    this.triggers.push(at);
    if (this.#reading) {
      this.#again = at;
      return;
    }
    void this.#read(at);
  }

  async #read(triggeredAt: number): Promise<void> {
    this.#reading = true;
    try {
      for (let attempt = 0; !this.closed; attempt++) {
        try {
          const text = await this.readText();
          this.reads.push({ triggeredAt, version: versionOf(text) });
          break;
        } catch (error) {
          // A legacy session's requests answer -32603 while Redis changes hands: read again.
          if (attempt % 10 === 0) this.errors.push(`read: ${String(error).slice(0, 200)}`);
          await sleep(100);
        }
      }
    } finally {
      this.#reading = false;
    }
    const again = this.#again;
    this.#again = undefined;
    if (again !== undefined && !this.closed) void this.#read(again);
  }

  /** The first read triggered after `at` that saw version `version` or later (undefined: none yet). */
  heard(write: Write): Read | undefined {
    return this.reads.find((read) => read.triggeredAt > write.at && read.version >= write.version);
  }

  /** Updates (triggers) that arrived in `[from, to)`. */
  triggersIn(from: number, to: number): number {
    return this.triggers.filter((at) => at >= from && at < to).length;
  }

  abstract close(): Promise<void>;
}

/** The official 1.x client: a legacy session, its GET stream, resources/subscribe; each GET's frames read as they pass. */
export class Sdk1Client extends ObservingClient {
  readonly frames: SeenFrame[] = [];
  readonly client = new Client1({ name: 'production-day-sdk1', version: '0.0.0' });
  transport!: Transport1;
  gets = 0;

  static async connect(name: string, url: string, uri: string): Promise<Sdk1Client> {
    const self = new Sdk1Client(name, uri);
    self.client.onerror = (error) => void self.errors.push(String(error).slice(0, 200));
    self.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      if (notification.params.uri === uri) self.heardUpdate();
    });
    self.transport = new Transport1(new URL(url), {
      fetch: (input: string | URL | Request, init?: RequestInit) => self.#fetch(input, init),
      // The server's `retry:` (--reconnect-delay) sets the delay; keep trying through a failover.
      reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 100 },
    });
    await self.client.connect(self.transport);
    return self;
  }

  /** resources/subscribe for the file ({} expected). */
  subscribe(): Promise<unknown> {
    return this.client.subscribeResource({ uri: this.uri });
  }

  protected async readText(): Promise<string | undefined> {
    const result = await this.client.readResource({ uri: this.uri }, { timeout: 5000 });
    return (result.contents[0] as { text?: string } | undefined)?.text;
  }

  async #fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const response = await fetch(input, init);
    if ((init?.method ?? 'GET') !== 'GET' || !response.ok || response.body === null) return response;
    const connection = this.gets++;
    if (connection > 0) this.reconnects++;
    const resumed = new Headers(init?.headers).has('last-event-id');
    const [mine, theirs] = response.body.tee();
    void readSse(theirs, (event, primedAt) => {
      if (event.event !== 'message' || event.id === undefined) return;
      const message = JSON.parse(event.data) as { method?: string; params?: { uri?: string } };
      const at = Date.now();
      this.frames.push({ id: Number(event.id), method: message.method ?? '', uri: message.params?.uri, at, connection, replayed: resumed && primedAt !== undefined && at - primedAt <= REPLAY_MS });
    });
    return new Response(mine, { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client.close().catch(() => undefined);
  }
}

/** The official 2.x client: a listen for the file, opened again (and the file re-read) whenever it ends. */
export class ListenClient extends ObservingClient {
  readonly client = new Client2({ name: 'production-day-listen', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  readonly acks: number[] = [];
  readonly endings: string[] = [];
  #subscription: { close(): Promise<void>; closed: Promise<string> } | undefined;
  #loop: Promise<void> | undefined;

  static async connect(name: string, url: string, uri: string): Promise<ListenClient> {
    const self = new ListenClient(name, uri);
    self.client.onerror = (error) => void self.errors.push(String(error).slice(0, 200));
    self.client.setNotificationHandler('notifications/resources/updated', (notification) => {
      if (notification.params.uri === uri) self.heardUpdate();
    });
    await self.client.connect(new Transport2(new URL(url)), { timeout: 5000 });
    await self.#listen();
    self.#loop = self.#keepListening();
    return self;
  }

  async #listen(): Promise<void> {
    this.#subscription = (await this.client.listen({ resourceSubscriptions: [this.uri] }, { timeout: 5000 })) as never;
    const at = Date.now();
    this.acks.push(at);
    this.trigger(at); // a new listen has no replay: its client re-reads
  }

  async #keepListening(): Promise<void> {
    while (!this.closed) {
      this.endings.push(String(await this.#subscription!.closed));
      if (this.closed) return;
      this.reconnects++;
      for (;;) {
        try {
          await this.#listen();
          break;
        } catch (error) {
          this.errors.push(`listen: ${String(error).slice(0, 200)}`);
          if (this.closed) return;
          await sleep(100);
        }
      }
    }
  }

  protected async readText(): Promise<string | undefined> {
    const result = await this.client.readResource({ uri: this.uri }, { timeout: 5000 });
    return (result.contents[0] as { text?: string } | undefined)?.text;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.#subscription?.close().catch(() => undefined);
    await this.client.close().catch(() => undefined);
    await this.#loop;
  }
}

/**
 * A raw legacy client on node:http: initialize, its GET stream read line by line (every `id:`),
 * resources/subscribe, and a reconnect with `Last-Event-ID` (the last id it read) `retry:` ms after
 * its stream ends or is cut, for as long as it runs.
 */
export class RawLegacyClient extends ObservingClient {
  readonly frames: SeenFrame[] = [];
  /** The priming event of each GET: the id it carried and the Last-Event-ID it was asked with. */
  readonly primings: { readonly id: string | undefined; readonly asked: string | undefined; readonly at: number }[] = [];
  sessionId = '';
  lastEventId: string | undefined;
  retry = 200;
  #rpc = 10;
  #current: http.ClientRequest | undefined;
  #loop: Promise<void> | undefined;
  gets = 0;

  private constructor(
    name: string,
    readonly url: string,
    uri: string,
  ) {
    super(name, uri);
  }

  static async connect(name: string, url: string, uri: string): Promise<RawLegacyClient> {
    const self = new RawLegacyClient(name, url, uri);
    const params = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '0.0.0' } };
    const reply = await send(url, 'POST', { ...INIT_HEADERS }, rpcBody(1, 'initialize', params));
    if (reply.status !== 200) throw new Error(`initialize: ${reply.status} ${reply.body}`);
    self.sessionId = reply.headers['mcp-session-id'] as string;
    await send(url, 'POST', sessionHeaders(self.sessionId), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    self.#loop = self.#keepReading();
    return self;
  }

  /** A JSON-RPC request in the session, through the proxy. */
  async call(method: string, params: unknown): Promise<any> {
    const reply = await send(this.url, 'POST', sessionHeaders(this.sessionId), rpcBody(this.#rpc++, method, params));
    const json = reply.json as { result?: unknown; error?: { code: number; message: string } } | undefined;
    if (reply.status !== 200 || json === undefined || json.error !== undefined) throw new Error(`${method}: HTTP ${reply.status} ${reply.body.slice(0, 200)}`);
    return json.result;
  }

  subscribe(): Promise<unknown> {
    return this.call('resources/subscribe', { uri: this.uri });
  }

  protected async readText(): Promise<string | undefined> {
    const result = (await this.call('resources/read', { uri: this.uri })) as { contents: { text?: string }[] };
    return result.contents[0]?.text;
  }

  async #keepReading(): Promise<void> {
    while (!this.closed) {
      await this.#oneGet();
      if (this.closed) return;
      await sleep(this.retry);
      this.reconnects++;
    }
  }

  #oneGet(): Promise<void> {
    const connection = this.gets++;
    const asked = this.lastEventId;
    const headers: Record<string, string> = { accept: 'text/event-stream', 'mcp-session-id': this.sessionId, 'mcp-protocol-version': '2025-11-25' };
    if (asked !== undefined) headers['last-event-id'] = asked;
    return new Promise<void>((resolve) => {
      const req = http.request(this.url, { method: 'GET', headers, agent: false });
      this.#current = req;
      req.on('error', () => resolve());
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          this.errors.push(`GET: HTTP ${res.statusCode}`);
          res.resume();
          res.on('close', () => resolve());
          return;
        }
        let primedAt: number | undefined;
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          pending += chunk;
          let end: number;
          while ((end = pending.indexOf('\n\n')) >= 0) {
            const event = parseEvent(pending.slice(0, end));
            pending = pending.slice(end + 2);
            if (event === undefined) continue;
            const at = Date.now();
            if (event.retry !== undefined) this.retry = event.retry;
            if (event.id !== undefined) this.lastEventId = event.id;
            if (event.event === undefined && event.retry !== undefined) {
              primedAt = at;
              this.primings.push({ id: event.id, asked, at });
              continue;
            }
            if (event.event !== 'message' || event.id === undefined) continue;
            const message = JSON.parse(event.data) as { method?: string; params?: { uri?: string } };
            this.frames.push({ id: Number(event.id), method: message.method ?? '', uri: message.params?.uri, at, connection, replayed: asked !== undefined && primedAt !== undefined && at - primedAt <= REPLAY_MS });
            if (message.method === 'notifications/resources/updated' && message.params?.uri === this.uri) this.heardUpdate();
          }
        });
        res.on('error', () => undefined);
        res.on('close', () => resolve());
      });
      req.end();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.#current?.destroy();
    await this.#loop;
    await send(this.url, 'DELETE', sessionHeaders(this.sessionId)).catch(() => undefined);
  }
}

/** One SSE event's fields (comments skipped); undefined for a keep-alive. */
function parseEvent(block: string): { event?: string; id?: string; retry?: number; data: string } | undefined {
  const event: { event?: string; id?: string; retry?: number; data: string } = { data: '' };
  let any = false;
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    any = true;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event.event = value;
    else if (field === 'id') event.id = value;
    else if (field === 'retry') event.retry = Number(value);
    else if (field === 'data') event.data = event.data === '' ? value : `${event.data}\n${value}`;
  }
  return any ? event : undefined;
}

/** Reads an SSE body, calling `onEvent` for each event with the time its stream's priming event arrived. */
async function readSse(body: ReadableStream<Uint8Array>, onEvent: (event: { event?: string; id?: string; data: string }, primedAt: number | undefined) => void): Promise<void> {
  const decoder = new TextDecoder();
  let pending = '';
  let primedAt: number | undefined;
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      pending += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = pending.search(/\r?\n\r?\n/)) >= 0) {
        const block = pending.slice(0, end);
        pending = pending.slice(end).replace(/^\r?\n\r?\n/, '');
        const event = parseEvent(block);
        if (event === undefined) continue;
        if (event.event === undefined && event.retry !== undefined) {
          primedAt = Date.now();
          continue;
        }
        onEvent(event, primedAt);
      }
    }
  } catch {
    // cut: the client's own reader reports it
  }
}

// ---------------------------------------------------------------------------------------------
// The checks on legacy ids

/** The re-read signal (docs/fleet.md): `resources/updated` for each subscribed URI, then each list's `list_changed`. */
function rereadAt(frames: readonly SeenFrame[], from: number, uri: string): boolean {
  for (let k = from; k + 1 < frames.length && frames[k]!.connection === frames[from]!.connection; k++) {
    if (frames[k]!.method === 'notifications/resources/updated' && frames[k]!.uri === uri && frames[k + 1]!.method.endsWith('/list_changed')) return true;
  }
  return false;
}

/**
 * The ids a client read on its GET streams, in arrival order, across reconnects: each is the one
 * before plus one (no repeat, no skip), or a skip followed on the same stream by the re-read signal
 * (docs/fleet.md, "Ids across a move": "a gap in the ids is always followed by it"). Returns the
 * problems found, and the gaps that were announced.
 */
export function checkIds(frames: readonly SeenFrame[], uri: string): { problems: string[]; announcedGaps: string[] } {
  const problems: string[] = [];
  const announcedGaps: string[] = [];
  for (let i = 1; i < frames.length; i++) {
    const [before, now] = [frames[i - 1]!.id, frames[i]!.id];
    if (now === before + 1) continue;
    if (now <= before) {
      problems.push(`id ${now} after ${before} (a repeat) on GET ${frames[i]!.connection}`);
      continue;
    }
    if (rereadAt(frames, i, uri)) announcedGaps.push(`${before + 1}–${now - 1}`);
    else problems.push(`ids ${before + 1}–${now - 1} skipped (after ${before} on GET ${frames[i - 1]!.connection}, then ${now} on GET ${frames[i]!.connection}) and not followed by the re-read signal`);
  }
  return { problems, announcedGaps };
}
