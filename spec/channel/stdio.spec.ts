// The channel protocol over stdio framing (adapters/channel/stdio.ts) on in-process streams: the
// server's serveStdio on one pair of PassThroughs, the client a stdioChannel on the other ends.
import { PassThrough } from 'node:stream';
import { serveStdio, stdioChannel } from '../../adapters/channel/stdio.js';
import { channelProtocolSuite } from '../helpers/channelProtocol.js';

channelProtocolSuite('stdio (newline-delimited JSON over streams)', async (endpoint) => {
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  const session = serveStdio(endpoint, { input: toServer, output: toClient });
  const client = stdioChannel({ input: toClient, output: toServer });
  return {
    client,
    session,
    pause: () => toClient.pause(),
    resume: () => toClient.resume(),
    hangUp: () => {
      toServer.end();
      client.close();
    },
    dispose: async () => {},
  };
});
