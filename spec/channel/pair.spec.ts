// The channel protocol over the in-process pair (adapters/channel/pair.ts).
import { channelPair } from '../../adapters/channel/pair.js';
import { serveChannel } from '../../adapters/channel/session.js';
import { channelProtocolSuite } from '../helpers/channelProtocol.js';

channelProtocolSuite('in-process pair', async (endpoint) => {
  const [client, server] = channelPair();
  const session = serveChannel(endpoint, server);
  return {
    client,
    session,
    pause: () => client.pause(),
    resume: () => client.resume(),
    hangUp: () => client.close(),
    dispose: async () => {},
  };
});
