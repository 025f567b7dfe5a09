// A machine's cluster in one process, for specs that need many workers and no fork: a stand-in
// for node:cluster whose IPC channels carry JSON copies of every message, delivered in a later
// event-loop turn in order (as a pipe does), and whose workers can die at once. Each worker is a
// real Hub + McpEndpoint on its own loopback port, joined through the library's own worker side.
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { nodeHandler } from '../../adapters/http/node.js';
import type { WorkerHandle } from '../../adapters/cluster/member.js';
import { checkPrimaryOptions, Primary, type ClusterPrimaryOptions } from '../../adapters/cluster/primary.js';
import { joinCluster, type ClusterWorker } from '../../adapters/cluster/worker.js';
import type { WorkerPort } from '../../adapters/cluster/link.js';
import { Hub } from '../../lib/hub.js';

/** A copy of `message` as it would cross an IPC channel (JSON), delivered in a later turn. */
function carry(message: unknown, deliver: (copy: unknown) => void, callback: (error: Error | null) => void): void {
  const copy = JSON.parse(JSON.stringify(message)) as unknown;
  setImmediate(() => {
    deliver(copy);
    callback(null);
  });
}

class FakeWorkerHandle implements WorkerHandle {
  readonly process: { readonly pid: number };
  dead = false;

  constructor(
    readonly id: number,
    private readonly port: FakeWorkerPort,
  ) {
    this.process = { pid: 100_000 + id };
  }

  send(message: unknown, callback: (error: Error | null) => void): boolean {
    if (this.dead) {
      setImmediate(() => callback(new Error('channel closed')));
      return false;
    }
    carry(message, (copy) => this.port.emit('message', copy), callback);
    return true;
  }
}

class FakeWorkerPort extends EventEmitter implements WorkerPort {
  handle!: FakeWorkerHandle;

  constructor(private readonly cluster: FakeCluster) {
    super();
  }

  send(message: unknown, callback: (error: Error | null) => void): boolean {
    if (this.handle.dead) {
      setImmediate(() => callback(new Error('channel closed')));
      return false;
    }
    carry(message, (copy) => {
      if (!this.handle.dead) this.cluster.emit('message', this.handle, copy);
    }, callback);
    return true;
  }
}

/** The stand-in for node:cluster in the primary. */
export class FakeCluster extends EventEmitter {
  #next = 0;

  /** A new worker's two ends: the primary's handle and the worker's `process`. */
  fork(): { handle: FakeWorkerHandle; port: FakeWorkerPort } {
    const port = new FakeWorkerPort(this);
    const handle = new FakeWorkerHandle(++this.#next, port);
    port.handle = handle;
    return { handle, port };
  }

  /** The worker dies at once (SIGKILL): its channel closes, the primary sees it exit. */
  kill(handle: FakeWorkerHandle): void {
    handle.dead = true;
    this.emit('exit', handle, null, 'SIGKILL');
  }
}

/** One worker of a {@link TestMachine}: its cluster parts, hub, endpoint and loopback server. */
export interface TestWorker {
  readonly handle: FakeWorkerHandle;
  readonly node: ClusterWorker;
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly url: string;
  /** Closes its endpoint and server and leaves the cluster (a graceful stop). */
  close(): Promise<void>;
  /** Dies at once: its sockets are destroyed and the primary sees it exit. */
  kill(): void;
}

/** A primary and its workers in this process. */
export interface TestMachine {
  readonly primary: Primary;
  readonly cluster: FakeCluster;
  readonly workers: TestWorker[];
  /** Starts one more worker (a restart, say). */
  addWorker(): Promise<TestWorker>;
  close(): Promise<void>;
}

/**
 * A machine of `count` workers: `primary` are {@link ClusterPrimaryOptions}, `endpoint` the
 * options every worker's endpoint gets besides its hub and its cluster parts (or a function of the
 * worker's index, from 0, and its cluster parts, for options of one worker: a store that answers
 * late, say).
 */
export async function startMachine(
  count: number,
  primary: ClusterPrimaryOptions = {},
  endpoint: Partial<McpEndpointOptions> | ((index: number, node: ClusterWorker) => Partial<McpEndpointOptions>) = {},
): Promise<TestMachine> {
  const cluster = new FakeCluster();
  const machine = new Primary(cluster as never, checkPrimaryOptions({ nodeId: 'm', ...primary }));
  const workers: TestWorker[] = [];
  const addWorker = async () => {
    const { handle, port } = cluster.fork();
    const index = workers.length;
    const node = await joinCluster(port, { capacityRetryAfter: 5000, timeout: 5000 });
    const hub = new Hub({ bus: node.bus });
    const own = typeof endpoint === 'function' ? endpoint(index, node) : endpoint;
    const served = new McpEndpoint({ capabilities: { tools: true, prompts: true, resources: true }, ...node.endpointOptions, ...own, hub });
    const server = http.createServer(nodeHandler(served));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port: tcp } = server.address() as AddressInfo;
    let closed = false;
    const worker: TestWorker = {
      handle,
      node,
      hub,
      endpoint: served,
      url: `http://127.0.0.1:${tcp}/mcp`,
      close: async () => {
        if (closed) return;
        closed = true;
        // As the reference server stops: the endpoint's close (its sessions handed to the other
        // workers) is awaited before the hub and the cluster link go.
        const handedOver = served.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await handedOver;
        hub.close();
        node.close();
        cluster.kill(handle);
      },
      kill: () => {
        if (closed) return;
        closed = true;
        // What a dead process leaves: its clients' connections reset, its timers gone, its channel closed.
        server.closeAllConnections();
        server.close();
        served.close();
        hub.close();
        cluster.kill(handle);
        node.close();
      },
    };
    workers.push(worker);
    return worker;
  };
  for (let i = 0; i < count; i++) await addWorker();
  return {
    primary: machine,
    cluster,
    workers,
    addWorker,
    close: async () => {
      for (const worker of workers) await worker.close();
      machine.close();
    },
  };
}
