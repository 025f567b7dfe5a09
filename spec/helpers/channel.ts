import type { MessageChannel } from '../../adapters/channel/channel.js';

/** A JSON-RPC message as a peer received it. */
export type Message = Record<string, any>;

/**
 * The client's side of a message channel in a spec: what it received (each message's exact text
 * and its JSON), and a way to wait for a message.
 */
export class Peer {
  /** Every message received, as its exact text. */
  readonly texts: string[] = [];
  /** Every message received, parsed. */
  readonly received: Message[] = [];
  ended = false;

  constructor(readonly channel: MessageChannel) {
    channel.incoming.subscribe({
      next: (input) => {
        const text = typeof input === 'string' ? input : input instanceof Uint8Array ? Buffer.from(input).toString('utf8') : JSON.stringify(input);
        this.texts.push(text);
        this.received.push(JSON.parse(text) as Message);
      },
      complete: () => (this.ended = true),
      error: () => (this.ended = true),
    });
  }

  /** Sends a message (an object is sent as its JSON) or raw text. */
  send(message: object | string): boolean {
    return this.channel.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The first message received at or after index `from` that `match` accepts; rejects after `ms`. */
  async next(match: (message: Message) => boolean, what: string, ms = 4_000, from = 0): Promise<Message> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.received.slice(from).find(match);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; received ${JSON.stringify(this.texts.slice(-5))}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Sends a request and resolves with its answer (the message with its id and no method). */
  async request(id: string | number, method: string, params?: object, ms?: number): Promise<Message> {
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    return this.next((message) => message.id === id && message.method === undefined, `the answer to ${method} (${JSON.stringify(id)})`, ms);
  }

  /** The messages received so far tagged with subscription id `id`. */
  tagged(id: string | number): Message[] {
    return this.received.filter((message) => (message.params ?? message.result)?._meta?.['io.modelcontextprotocol/subscriptionId'] === id);
  }
}

/** Polls `predicate` every 5 ms; rejects after `ms`. */
export async function until(predicate: () => boolean, what: string, ms = 4_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
