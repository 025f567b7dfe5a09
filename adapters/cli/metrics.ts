// `serve --metrics-port`: the endpoint's Prometheus metrics (and, with --admin-token, the admin
// endpoints) on a port of their own. prom-client is loaded only then.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReferenceServer } from '../reference/server.js';
import { RunError } from './errors.js';
import type { CliLogger } from './logLevels.js';

/** Serves the endpoint's Prometheus metrics on `http://host:port/metrics`, with prom-client's process metrics. */
export async function serveMetrics(server: ReferenceServer, host: string, port: number, adminToken: string | undefined, logger: CliLogger): Promise<{ url: string; close: () => Promise<void> }> {
  const { collectMetrics } = await import('../metrics/index.js');
  const { requirePeer } = await import('../peer.js');
  const { answerHeaders, whenParsed } = await import('../http/node.js');
  const prom = requirePeer<typeof import('prom-client')>('prom-client', 'serve --metrics-port');
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const bridge = collectMetrics(registry, server.endpoint);
  // Without --admin-token there are no admin endpoints at all: /streams and /revoke are 404 like any other path.
  const admin = adminToken === undefined ? undefined : (await import('../admin.js')).adminRoutes(server.endpoint, adminToken, logger);
  // Only POST /revoke reads a body: any other request answered while its body is still coming closes its connection (whenParsed, answerHeaders).
  const http_ = http.createServer({ requestTimeout: 10_000, headersTimeout: 10_000 }, (req, res) => {
    if (admin?.(req, res) === true) return;
    if ((req.url ?? '/').split('?')[0] !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      whenParsed(req, () => res.writeHead(404, answerHeaders(req, { 'Content-Type': 'text/plain' })).end('not found: metrics are at GET /metrics\n'));
      return;
    }
    registry.metrics().then(
      (text) => whenParsed(req, () => res.writeHead(200, answerHeaders(req, { 'Content-Type': registry.contentType })).end(req.method === 'HEAD' ? undefined : text)),
      (error: unknown) => whenParsed(req, () => res.writeHead(500, answerHeaders(req, { 'Content-Type': 'text/plain' })).end(`${String(error)}\n`)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    http_.once('error', (error: NodeJS.ErrnoException) =>
      reject(new RunError(`--metrics-port ${port}: cannot listen on ${host}:${port} (${error.code ?? error.message})`)),
    );
    http_.listen(port, host, () => resolve());
  });
  const address = http_.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        bridge.close();
        http_.close(() => resolve());
        http_.closeAllConnections();
      }),
  };
}
