/**
 * The edge on a listening server: the state stream's WebSocket upgrade is a request that can change nothing but
 * reads everything, so it gets the origin check and the token like a POST (docs/security.md).
 */
import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createRobotServer, type RobotServer } from '../../src/server.ts';

const TOKEN = 'stream-token-5678';

/** Opens the stream with `headers`: the status of a refused upgrade, or 101 and the first message's type. */
function openStream(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; first?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once('message', (data) => {
      resolve({ status: 101, first: (JSON.parse(String(data)) as { type: string }).type });
      ws.close();
    });
    ws.once('error', (err) => {
      if (!String(err.message).includes('Unexpected server response')) reject(err);
    });
  });
}

describe('the edge on a listening server: the state stream (WebSocket)', function () {
  this.timeout(30000);
  let server: RobotServer;
  let port: number;
  before(async () => {
    server = await createRobotServer({
      backend: 'sim',
      robot: 'ergo-jr',
      speed: 'manual',
      access: { tokens: [TOKEN] },
    });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    port = (server.app.server.address() as AddressInfo).port;
  });
  after(() => server.close());

  const url = () => `ws://127.0.0.1:${port}/stream/state`;
  const own = () => `http://127.0.0.1:${port}`;

  it('refuses an upgrade from another origin, even with the token', async () => {
    const res = await openStream(url(), {
      origin: 'http://localhost:5000',
      authorization: `Bearer ${TOKEN}`,
    });
    expect(res.status).to.equal(403);
  });

  it('refuses an upgrade without the token or with a wrong one', async () => {
    expect((await openStream(url(), { origin: own() })).status).to.equal(401);
    expect(
      (await openStream(url(), { origin: own(), cookie: `poppy-twin-token-${port}=nope-nope-nope` })).status,
    ).to.equal(401);
  });

  it('opens from the own origin with the token in a cookie, the header or the URL', async () => {
    for (const [headers, query] of [
      [{ origin: own(), cookie: `poppy-twin-token-${port}=${TOKEN}` }, ''],
      [{ authorization: `Bearer ${TOKEN}` }, ''],
      [{ origin: own() }, `?token=${TOKEN}`],
    ] as const) {
      const res = await openStream(url() + query, headers);
      expect(res, JSON.stringify(headers)).to.deep.equal({ status: 101, first: 'hello' });
    }
  });

  it('counts the refusals by reason in /metrics', async () => {
    const res = await fetch(`${own()}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await res.text();
    expect(text).to.match(/poppy_http_refused_total\{reason="origin"\} [1-9]/);
    expect(text).to.match(/poppy_http_refused_total\{reason="token"\} [2-9]/);
  });
});
