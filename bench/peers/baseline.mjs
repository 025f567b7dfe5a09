// The hand-written reference ("baseline"): a node:http `subscriptions/listen` server. It parses the
// request, writes the ack, keeps each stream in a per-topic Set and writes every notification
// with one `res.write` of a frame built from a prefix encoded once per publish plus the stream's
// own subscription id (DESIGN M5: every message carries its stream's id). No queue, no caps, no
// timers per stream (one keep-alive interval for all streams), no backpressure handling.
// peers/ceiling.mjs is this server with each frame written as one chunk string on the socket.
import { readListen, SSE_HEADERS, StreamSets, SUBSCRIPTION_ID_META_KEY } from './common.mjs';

export const name = 'baseline';
export const description = 'hand-written node:http + res.write';

export async function create() {
  const streams = new StreamSets();
  const { all, tools, byUri } = streams;
  const keepAlive = setInterval(() => {
    for (const stream of all) stream.res.write(':\r\n');
  }, 15_000);
  keepAlive.unref();

  const metaKey = JSON.stringify(SUBSCRIPTION_ID_META_KEY);
  const handler = async (req, res) => {
    const listen = await readListen(req, res);
    if (listen === undefined) return;
    const { message, filter } = listen;
    const stream = { res, idJson: JSON.stringify(message.id) };
    res.writeHead(200, SSE_HEADERS);
    res.write(
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":${JSON.stringify(filter)},"_meta":{${metaKey}:${stream.idJson}}}}\n\n`,
    );
    streams.add(stream, filter, res);
  };

  const writeAll = (set, head) => {
    const tail = '}}}\n\n';
    for (const stream of set) stream.res.write(head + stream.idJson + tail);
  };
  return {
    handler,
    publish(uri) {
      const set = byUri.get(uri);
      if (set !== undefined) {
        writeAll(set, `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":${JSON.stringify(uri)},"_meta":{${metaKey}:`);
      }
    },
    publishMarker() {
      writeAll(tools, `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{${metaKey}:`);
    },
    registry: () => ({ streams: all.size, topics: byUri.size }),
    close() {
      clearInterval(keepAlive);
    },
  };
}
