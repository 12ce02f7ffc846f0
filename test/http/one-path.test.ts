/**
 * One request path: every request goes through fastify, so the same bytes get the same answer whatever the URL's
 * form. The cases below are those where a second path beside fastify once answered otherwise (issue 47); each is
 * sent over a real socket as it is and with `?` appended to its URL, and the answers must match.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/core/logger.ts';
import type { RouteSpec } from '../../src/http/route.ts';
import { createRobotServer, type RobotServer } from '../../src/server.ts';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection after answering. */
  closed: boolean;
}

/** Sends `bytes` on a new connection and reads one answer (then waits briefly to see whether the server closes). */
function send(port: number, bytes: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    let closed = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const [head, ...rest] = data.split('\r\n\r\n');
      const lines = head!.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), closed });
    };
    socket.on('data', (chunk) => {
      data += chunk.toString('utf8');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(data.slice(0, end))?.[1] ?? 0);
      if (Buffer.byteLength(data.slice(end + 4)) >= length) {
        clearTimeout(timer);
        timer = setTimeout(finish, 150);
      }
    });
    socket.on('end', () => {
      closed = true;
      finish();
    });
    socket.on('error', reject);
    socket.write(bytes);
  });
}

function request(method: string, url: string, headers: Record<string, string>, body = ''): string {
  const lines = [
    `${method} ${url} HTTP/1.1`,
    'Host: 127.0.0.1',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  if (body || method === 'POST') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return lines.join('\r\n') + '\r\n\r\n' + body;
}

const withQuery = (url: string) => url + '?';

/** What must match between the two forms: status, body, and whether the connection stays. */
function comparable(a: RawAnswer): unknown {
  return { status: a.status, body: a.body, closed: a.closed, type: a.headers['content-type'] };
}

describe('one request path: the same bytes, the same answer, whatever the URL form', function () {
  this.timeout(30000);
  let server: RobotServer;
  let port: number;
  before(async () => {
    server = await createRobotServer({ backend: 'sim', robot: 'ergo-jr', speed: 'manual' });
    await server.app.listen({ port: 0, host: '127.0.0.1' });
    port = (server.app.server.address() as net.AddressInfo).port;
  });
  after(() => server.close());

  const cases: [string, string, string, Record<string, string>, string][] = [
    [
      'a list of content types',
      'POST',
      '/motors/m1/goto.json',
      { 'Content-Type': 'application/json, text/plain' },
      '{"position": 30, "duration": 1}',
    ],
    ['a parameter over 100 characters', 'GET', `/motors/${'m'.repeat(120)}/registers/list.json`, {}, ''],
    [
      'a body that is not JSON',
      'POST',
      '/motors/goto.json',
      { 'Content-Type': 'application/json' },
      '{"motors": [',
    ],
    [
      'a body that does not fit the schema',
      'POST',
      '/motors/m1/goto.json',
      { 'Content-Type': 'application/json' },
      '{"position": "x"}',
    ],
    ['a plain register read', 'GET', '/motors/m1/registers/compliant/value.json', {}, ''],
    ['an unknown motor', 'GET', '/motors/m9/registers/list.json', {}, ''],
  ];
  for (const [what, method, url, headers, body] of cases)
    it(what, async () => {
      const plain = await send(port, request(method, url, headers, body));
      const queried = await send(port, request(method, withQuery(url), headers, body));
      expect(comparable(queried), what).to.deep.equal(comparable(plain));
      expect(plain.headers['cache-control']).to.equal('no-store');
    });

  it('a goto with a list of content types moves nothing', async () => {
    const goal = async () =>
      (
        await server.app.inject({ method: 'GET', url: '/motors/m1/registers/goal_position/value.json' })
      ).json();
    const before = await goal();
    const a = await send(
      port,
      request(
        'POST',
        '/motors/m1/goto.json',
        { 'Content-Type': 'application/json, text/plain' },
        '{"position": 30, "duration": 1}',
      ),
    );
    expect(a.status).to.be.within(400, 499);
    expect(await goal()).to.deep.equal(before);
  });
});

describe('one request path: a handler that throws a value that is not an Error', function () {
  it('answers 500 both ways and the server keeps serving', async () => {
    const routes: RouteSpec[] = [
      {
        method: 'GET',
        path: '/boom.json',
        summary: 'throws a string',
        handler: () => {
          throw 'not an error';
        },
      },
    ];
    const app = buildApp({ routes, logger: silentLogger });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const port = (app.server.address() as net.AddressInfo).port;
      const plain = await send(port, request('GET', '/boom.json', {}));
      const queried = await send(port, request('GET', withQuery('/boom.json'), {}));
      expect(plain.status).to.equal(500);
      expect(comparable(queried)).to.deep.equal(comparable(plain));
      expect((await send(port, request('GET', '/', {}))).status).to.equal(200);
    } finally {
      await app.close();
    }
  });
});

describe('one request path: nothing in src/ answers requests beside fastify', function () {
  it('has no serverFactory and no listener of its own on the server', () => {
    const grep = spawnSync('git', ['grep', '-n', '-e', 'serverFactory', '-e', "on('request'", '--', 'src'], {
      encoding: 'utf8',
    });
    // git grep exits 1 when it finds nothing.
    expect(grep.status, grep.stdout).to.equal(1);
    expect(grep.stdout).to.equal('');
  });
});
