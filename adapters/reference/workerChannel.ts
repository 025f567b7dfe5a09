// The reference server's own messages between the primary of `serve --workers` and its workers,
// beside mcp-rx-streams/cluster's: a worker says when it serves, and the primary asks each worker
// what only the worker knows (its metrics, its streams) or does (a revoke), for the machine's
// metrics and admin endpoints. Plain node:cluster IPC messages under a key of their own, which the
// cluster's own messages (and prom-client's) never carry.
import cluster, { type Worker } from 'node:cluster';

const KEY = 'mcp-rx-streams/reference';

/** What the primary may ask a worker. */
export type WorkerQuestion = 'metrics' | 'streams' | 'revoke';

type Message =
  | { readonly [KEY]: 'ready' }
  | { readonly [KEY]: 'ask'; readonly id: number; readonly op: WorkerQuestion; readonly args: readonly unknown[] }
  | { readonly [KEY]: 'answer'; readonly id: number; readonly value?: unknown; readonly error?: string };

function messageOf(value: unknown): Message | undefined {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[KEY] === 'string' ? (value as Message) : undefined;
}

/**
 * In a worker: tells the primary that this worker serves (its endpoint is open: requests that came
 * before waited for it), and answers the primary's questions with `answer` from then on.
 * @returns stops answering.
 * @internal
 */
export function serveWorkerChannel(answer: (op: WorkerQuestion, args: readonly unknown[]) => unknown): () => void {
  const send = (message: Message) => {
    if (process.connected) process.send!(message, undefined, undefined, () => undefined);
  };
  const onMessage = (value: unknown) => {
    const message = messageOf(value);
    if (message?.[KEY] !== 'ask') return;
    const { id, op, args } = message;
    Promise.resolve()
      .then(() => answer(op, args))
      .then(
        (result) => send({ [KEY]: 'answer', id, value: result }),
        (error: unknown) => send({ [KEY]: 'answer', id, error: error instanceof Error ? error.message : String(error) }),
      );
  };
  process.on('message', onMessage);
  send({ [KEY]: 'ready' });
  return () => void process.off('message', onMessage);
}

/** A worker's answer to {@link PrimaryChannel.ask}: its value, or the message of what it threw. */
export type WorkerAnswer = { readonly worker: number; readonly value: unknown } | { readonly worker: number; readonly error: string };

/** The primary's end: which workers serve, and their answers. @internal */
export interface PrimaryChannel {
  /** Told of each worker once it serves. */
  onReady(listener: (worker: Worker) => void): void;
  /**
   * Asks each of `workers` at once; resolves with the answers that came within `timeout`
   * milliseconds (a worker that exits or does not answer in time is left out), in the order of
   * `workers`.
   */
  ask(workers: readonly Worker[], op: WorkerQuestion, args: readonly unknown[], timeout: number): Promise<WorkerAnswer[]>;
  close(): void;
}

/** The primary's end of {@link serveWorkerChannel}. @internal */
export function primaryChannel(): PrimaryChannel {
  const ready: ((worker: Worker) => void)[] = [];
  const waiting = new Map<number, (message: { value?: unknown; error?: string }) => void>();
  let next = 0;
  const onMessage = (worker: Worker, value: unknown) => {
    const message = messageOf(value);
    if (message === undefined) return;
    if (message[KEY] === 'ready') for (const listener of ready) listener(worker);
    else if (message[KEY] === 'answer') waiting.get(message.id)?.(message);
  };
  cluster.on('message', onMessage);
  const askOne = (worker: Worker, op: WorkerQuestion, args: readonly unknown[], timeout: number) =>
    new Promise<WorkerAnswer | undefined>((resolve) => {
      const id = ++next;
      const done = (answer: WorkerAnswer | undefined) => {
        clearTimeout(timer);
        waiting.delete(id);
        worker.off('exit', gone);
        resolve(answer);
      };
      const gone = () => done(undefined);
      const timer = setTimeout(gone, timeout);
      waiting.set(id, ({ value, error }) => done(error === undefined ? { worker: worker.id, value } : { worker: worker.id, error }));
      worker.once('exit', gone);
      if (!worker.isConnected()) return gone();
      worker.send({ [KEY]: 'ask', id, op, args } satisfies Message, undefined, () => undefined);
    });
  return {
    onReady: (listener) => void ready.push(listener),
    ask: async (workers, op, args, timeout) => (await Promise.all(workers.map((worker) => askOne(worker, op, args, timeout)))).filter((answer): answer is WorkerAnswer => answer !== undefined),
    close: () => {
      cluster.off('message', onMessage);
      ready.length = 0;
    },
  };
}
