/**
 * Input safety (issue 8): any nesting depth is a 400, no body key becomes the body's prototype, HEAD is not an
 * action, node-level errors and wrong methods answer {error, tip, details}, numbers are decimal only, durations
 * and replay speeds have documented maxima.
 */
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { LightMyRequestResponse } from 'fastify';
import { MAX_DURATION } from '../../src/core/values.ts';
import { clientErrorHandler } from '../../src/http/errors.ts';
import { MAX_REPLAY_SPEED, MIN_REPLAY_SPEED } from '../../src/records/player.ts';
import { json, setValue, simServer, value, type TestServer } from '../helpers.ts';
import { isErrorBody } from './facts.ts';

function expectError(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
  const body = json(res);
  expect(isErrorBody(body), res.body).to.equal(true);
  return body;
}

/** Sends raw bytes to a listening server and returns what comes back before it closes the socket. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.on('data', (d) => (out += d.toString()));
    socket.on('end', () => resolve(out));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
  });
}

describe('input safety (issue 8)', function () {
  this.timeout(30000);
  let s: TestServer;
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'safety-'));
    s = await simServer('ergo-jr', { recordsDir: dir });
    await setValue(s, 'm1', 'compliant', false);
  });
  afterEach(async () => {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a body nested 5,000 levels deep is 400 on every kind of body route', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    for (const url of [
      '/motors/m1/goto.json',
      '/motors/goto.json',
      '/motors/m1/registers/goal_position/value.json',
      '/records/x/record.json',
      '/primitives/dance/methods/start/args.json',
      '/ik/chain/goto.json',
    ]) {
      const body = expectError(await s.post(url, deep), 400);
      expect(body.error, url).to.match(/nested/);
    }
    expectError(
      await s.post('/motors/m1/goto.json', `{"position": ${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`),
      400,
    );
  });

  it('a form body made of __proto__=<json> is a field named __proto__, not the body: 400, nothing moves', async () => {
    const goal = await value(s, 'm1', 'goal_position');
    const res = await s.post(
      '/motors/m1/goto.json',
      `__proto__=${encodeURIComponent('{"position": 40, "duration": 0.5}')}`,
      { 'content-type': 'application/x-www-form-urlencoded' },
    );
    expectError(res, 400);
    const bare = await s.post(
      '/motors/m1/registers/goal_position/value.json',
      '__proto__=%7B%22value%22%3A40%7D',
      {
        'content-type': 'application/x-www-form-urlencoded',
      },
    );
    expectError(bare, 400);
    await s.advance(0.6);
    expect(await value(s, 'm1', 'goal_position')).to.equal(goal);
    expect(({} as Record<string, unknown>).position).to.equal(undefined);
  });

  it('HEAD is not an action: 405 with Allow, and the primitive does not start', async () => {
    const res = await s.app.inject({ method: 'HEAD', url: '/primitives/dance/start.json' });
    expect(res.statusCode).to.equal(405);
    expect(res.headers.allow).to.equal('GET');
    expect(json(await s.get('/primitives/running/list.json')).primitives).to.deep.equal([]);
  });

  it('PUT, DELETE and PATCH on / and on any route are 405 with the error body', async () => {
    for (const method of ['PUT', 'DELETE', 'PATCH'] as const)
      for (const url of ['/', '/motors/list.json', '/motors/m1/goto.json'])
        expectError(await s.app.inject({ method, url }), 405);
  });

  it('numbers are decimal only: "0x10", "0b1", "Infinity" and "" are 400', async () => {
    for (const position of ['0x10', '0b1', 'Infinity', '', '1e999', '1_0'])
      expectError(await s.post('/motors/m1/goto.json', { position, duration: 1 }), 400);
    for (const v of ['0x10', '"0x10"', '"Infinity"'])
      expectError(await s.post('/motors/m1/registers/goal_position/value.json', v), 400);
    const ok = await s.post('/motors/m1/goto.json', { position: ' 12.5 ', duration: '1e0' });
    expect(ok.statusCode, ok.body).to.equal(200);
    expect(json(ok).motors).to.deep.equal({ m1: 12.5 });
  });

  it(`goto, IK goto and hand durations are at most ${MAX_DURATION} s; replay speed is ${MIN_REPLAY_SPEED} to ${MAX_REPLAY_SPEED} either way`, async () => {
    const goal = await value(s, 'm1', 'goal_position');
    for (const duration of [MAX_DURATION + 1, 1e308, 0, -1, 1e-320 * 0])
      expectError(await s.post('/motors/m1/goto.json', { position: 20, duration }), 400);
    expectError(await s.post('/motors/goto.json', { motors: ['m1'], positions: [20], duration: 1e9 }), 400);
    expectError(await s.post('/ik/chain/goto.json', { xyz: '0.05,-0.1,0.15', duration: 1e9 }), 400);
    expectError(await s.post('/sim/motors/m1/hand.json', { position: 20, duration: 1e9 }), 400);
    expect(await value(s, 'm1', 'goal_position')).to.equal(goal);
    expect(
      (await s.post('/motors/m1/goto.json', { position: 20, duration: MAX_DURATION })).statusCode,
    ).to.equal(200);

    await s.post('/records/w/record.json');
    await s.advance(0.2);
    await s.post('/records/w/save.json');
    for (const speed of [1e-320, -1e-320, MIN_REPLAY_SPEED / 2, -MAX_REPLAY_SPEED * 2, 1e308, '0x10'])
      expectError(await s.post('/records/w/play.json', { speed }), 400);
    expect(json(await s.get('/primitives/running/list.json')).primitives).to.deep.equal([]);
    for (const speed of [MIN_REPLAY_SPEED, -MIN_REPLAY_SPEED, MAX_REPLAY_SPEED, -MAX_REPLAY_SPEED])
      expect((await s.post('/records/w/play.json', { speed })).statusCode, String(speed)).to.equal(200);
  });

  it('node-level errors answer the JSON error body: malformed request 400, headers too large 431', async () => {
    await s.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = s.app.server.address() as net.AddressInfo;
    const cases: [string, number][] = [
      ['NOT HTTP AT ALL\r\n\r\n', 400],
      [`GET /motors/list.json HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, 431],
    ];
    for (const [bytes, status] of cases) {
      const answer = await raw(port, bytes);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head, answer).to.match(new RegExp(`^HTTP/1.1 ${status} `));
      expect(head).to.match(/Content-Type: application\/json/);
      expect(isErrorBody(JSON.parse(body!) as Record<string, unknown>), body).to.equal(true);
    }
  });

  it('a request timeout from node is a JSON 408 (the socket gets the error body, then closes)', () => {
    let written = '';
    const socket = { writable: true, end: (text: string) => (written = text), destroy: () => undefined };
    const err = Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
    clientErrorHandler('application/json; charset=utf-8')(err, socket as unknown as net.Socket);
    const [head, body] = written.split('\r\n\r\n');
    expect(head).to.match(/^HTTP\/1.1 408 /);
    expect(head).to.match(/Connection: close/);
    expect(isErrorBody(JSON.parse(body!) as Record<string, unknown>)).to.equal(true);
  });

  it('a request that arrives while the server closes gets 503 with the error body', async () => {
    await s.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = s.app.server.address() as net.AddressInfo;
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write('GET /motors/list.json HTTP/1.1\r\nHost: localhost\r\n');
    // let the half-sent request reach the server (event loop turns, no time)
    for (let turn = 0; turn < 10; turn++) await new Promise((r) => setImmediate(r));
    let out = '';
    socket.on('data', (d) => (out += d.toString()));
    const closing = s.app.close();
    socket.write('\r\n');
    await new Promise((r) => socket.once('close', r));
    await closing;
    const [head, body] = out.split('\r\n\r\n');
    expect(head, out).to.match(/^HTTP\/1.1 503 /);
    expect(isErrorBody(JSON.parse(body!) as Record<string, unknown>), body).to.equal(true);
  });
});
