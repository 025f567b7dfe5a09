// A part's pub/sub connection closed while it subscribes its channels again after a reconnection
// must not crash the process. ioredis 6.0's own resubscription (autoResubscribe) sent that
// SUBSCRIBE without a rejection handler: the close rejected it ("Connection is closed"), an
// unhandled rejection, which ends a Node process. The parts subscribe again themselves now
// (adapters/redis/connection.ts subscribeChannels), with a handler.
// Here a tiny RESP server stands in for Redis, so that the moment is exact: it answers the first
// connection's SUBSCRIBE, drops that connection, leaves the reconnection's SUBSCRIBE unanswered,
// and the part is closed then (its QUIT answered by the socket closing, as a dying server does).
import net from 'node:net';
import { test } from 'uvu';
import { RedisPrincipalCap } from '../../adapters/redis/principals.js';
import { RedisSessionBus } from '../../adapters/redis/sessionBus.js';
import { eventually } from '../helpers/http.js';
import { noUncaught } from '../helpers/wait.js';

/** One command of a RESP request stream: its words, or undefined while incomplete. */
function readCommand(buffer: Buffer, at: number): { words: string[]; end: number } | undefined {
  const line = (from: number) => {
    const cr = buffer.indexOf('\r\n', from);
    return cr < 0 ? undefined : { text: buffer.toString('latin1', from, cr), next: cr + 2 };
  };
  const head = line(at);
  if (head === undefined) return undefined;
  const count = Number(head.text.slice(1));
  const words: string[] = [];
  let next = head.next;
  for (let i = 0; i < count; i++) {
    const size = line(next);
    if (size === undefined) return undefined;
    const length = Number(size.text.slice(1));
    if (buffer.length < size.next + length + 2) return undefined;
    words.push(buffer.toString('utf8', size.next, size.next + length));
    next = size.next + length + 2;
  }
  return { words, end: next };
}

const bulk = (text: string) => `$${Buffer.byteLength(text)}\r\n${text}\r\n`;

interface FakeRedis {
  readonly url: string;
  /** SUBSCRIBEs received: the first one answered, the later ones not. */
  readonly subscribes: () => number;
  close(): Promise<void>;
}

/**
 * A RESP server: INFO says loaded, the first SUBSCRIBE is confirmed (and then its connection is
 * dropped) and later ones are not, QUIT closes the socket unanswered, anything else is +OK.
 */
async function fakeRedis(): Promise<FakeRedis> {
  const sockets = new Set<net.Socket>();
  let subscribes = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      let at = 0;
      for (let command = readCommand(pending, at); command !== undefined; command = readCommand(pending, at)) {
        at = command.end;
        const [name = '', ...args] = command.words;
        switch (name.toLowerCase()) {
          case 'info':
            socket.write(bulk('# Server\r\nredis_version:7.0.0\r\nloading:0\r\n'));
            break;
          case 'subscribe':
            if (++subscribes === 1) {
              args.forEach((channel, i) => socket.write(`*3\r\n${bulk('subscribe')}${bulk(channel)}:${i + 1}\r\n`));
              // Gone once subscribed: the part reconnects and subscribes again.
              setTimeout(() => socket.destroy(), 20);
            }
            break;
          case 'quit':
            socket.destroy();
            break;
          default:
            socket.write('+OK\r\n');
        }
      }
      pending = pending.subarray(at);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    subscribes: () => subscribes,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const parts = {
  RedisSessionBus: (redis: string) => new RedisSessionBus({ redis, nodeId: 'n', maxReconnectDelay: 50 }),
  RedisPrincipalCap: (redis: string) => new RedisPrincipalCap({ redis, nodeId: 'n', maxReconnectDelay: 50 }),
};

for (const [name, open] of Object.entries(parts)) {
  test(`${name}: closed while its subscriber subscribes again after a reconnection, nothing is left unhandled`, async () => {
    const redis = await fakeRedis();
    try {
      await noUncaught(async () => {
        const part = open(redis.url);
        // Subscribed on the first connection, dropped, subscribing on the second, unanswered.
        await eventually(() => redis.subscribes() === 2, 5000, 'the subscribe after the reconnection');
        await part.close();
      }, 100);
    } finally {
      await redis.close();
    }
  });
}

test.run();
