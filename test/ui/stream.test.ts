/**
 * The live state stream: the fan-out rules on a StateStream with fake sockets and a hand-driven wall clock, then the
 * WebSocket route of a real listening twin whose sim time the test advances.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import WebSocket from 'ws';
import { openTwin, type Twin } from '../../src/scenario/twin.ts';
import type { RobotDescription, RobotState, SceneDescription } from '../../src/ui/protocol.ts';
import { CLOSE_TOO_SLOW, StateStream, type ViewerSocket } from '../../src/ui/stream.ts';

class FakeSocket implements ViewerSocket {
  readonly frames: string[] = [];
  bufferedAmount = 0;
  closed: { code: number; reason: string } | undefined;
  send(data: string): void {
    this.frames.push(data);
  }
  close(code: number, reason: string): void {
    this.closed = { code, reason };
  }
}

/** A stream whose wall clock and pump the test drives. */
function manualStream(opts: { maxBufferedBytes?: number; dropAfterMs?: number } = {}) {
  let version = 0;
  let now = 0;
  let pumpPeriod = 0;
  let encodes = 0;
  const stream = new StateStream(
    {
      version: () => version,
      encode: (seq) => {
        encodes++;
        return JSON.stringify({ seq, version });
      },
    },
    {
      ...opts,
      now: () => now,
      every: (_fn, ms) => {
        pumpPeriod = ms;
        return () => (pumpPeriod = 0);
      },
    },
  );
  return {
    stream,
    tick: () => version++,
    /** Moves wall time by `ms` and runs the pump once. */
    after: (ms: number) => {
      now += ms;
      stream.pump();
    },
    get encodes() {
      return encodes;
    },
    get pumpPeriod() {
      return pumpPeriod;
    },
  };
}

describe('state stream fan-out', () => {
  it('encodes each new state once and hands the same text to ten viewers at 50 Hz', () => {
    const s = manualStream();
    const sockets = Array.from({ length: 10 }, () => new FakeSocket());
    for (const socket of sockets) s.stream.add(socket, 50);
    expect(s.encodes).to.equal(1); // the current state, for the first viewer; the others reuse it
    expect(s.pumpPeriod).to.equal(10); // twice the viewers' rate
    for (let i = 0; i < 5; i++) {
      s.tick();
      s.after(20);
    }
    expect(s.encodes).to.equal(6);
    for (const socket of sockets) {
      expect(socket.frames).to.have.length(6);
      expect(socket.frames).to.deep.equal(sockets[0]!.frames);
    }
    expect(JSON.parse(sockets[0]!.frames[5]!)).to.deep.equal({ seq: 6, version: 5 });
  });

  it('a state that comes just after a round still goes out at the next one, half a period later', () => {
    // The sim steps in 10 ms batches: the robot's 50 Hz ticks reach the stream up to 10 ms late, on either side of
    // the pump's rounds. Every tick must still become a frame.
    const s = manualStream();
    const socket = new FakeSocket();
    s.stream.add(socket, 50);
    for (let i = 0; i < 10; i++) {
      s.after(10); // a round finds nothing new...
      s.tick(); // ...the tick lands just after it...
      s.after(10); // ...and goes out at the next round
    }
    expect(socket.frames).to.have.length(11);
    // Never faster than the viewer's rate: ticks every 10 ms still give a frame at most every 15 ms.
    for (let i = 0; i < 10; i++) {
      s.tick();
      s.after(10);
    }
    expect(socket.frames.length).to.be.within(15, 17);
  });

  it('sends nothing new when the robot has not ticked', () => {
    const s = manualStream();
    const socket = new FakeSocket();
    s.stream.add(socket, 50);
    s.after(20);
    s.after(20);
    expect(socket.frames).to.have.length(1);
    expect(s.encodes).to.equal(1);
  });

  it("paces each viewer at its own rate and runs the pump at the fastest one's", () => {
    const s = manualStream();
    const fast = new FakeSocket();
    const slow = new FakeSocket();
    s.stream.add(fast, 50);
    const handle = s.stream.add(slow, 10);
    for (let i = 0; i < 10; i++) {
      s.tick();
      s.after(20);
    }
    expect(fast.frames).to.have.length(11);
    expect(slow.frames).to.have.length(3); // at 0, 100 and 200 ms
    handle.setRate(50);
    s.tick();
    s.after(20);
    expect(slow.frames).to.have.length(4);
    expect(() => handle.setRate(51)).to.throw(/at most 50/);
    expect(() => handle.setRate(0)).to.throw(/above 0/);
  });

  it('skips frames for a viewer whose buffer is full, then drops it; the others go on', () => {
    const s = manualStream({ maxBufferedBytes: 1000, dropAfterMs: 100 });
    const good = new FakeSocket();
    const stuck = new FakeSocket();
    s.stream.add(good, 50);
    s.stream.add(stuck, 50);
    stuck.bufferedAmount = 5000;
    for (let i = 0; i < 4; i++) {
      s.tick();
      s.after(20);
    }
    expect(stuck.frames).to.have.length(1);
    expect(stuck.closed).to.equal(undefined);
    expect(s.stream.stats().skipped).to.equal(4);
    for (let i = 0; i < 3; i++) {
      s.tick();
      s.after(20);
    }
    expect(stuck.closed?.code).to.equal(CLOSE_TOO_SLOW);
    expect(s.stream.viewerCount).to.equal(1);
    expect(good.frames).to.have.length(8);
  });

  it('a viewer that catches up before the limit is kept', () => {
    const s = manualStream({ maxBufferedBytes: 1000, dropAfterMs: 100 });
    const socket = new FakeSocket();
    s.stream.add(socket, 50);
    socket.bufferedAmount = 5000;
    for (let i = 0; i < 3; i++) {
      s.tick();
      s.after(20);
    }
    socket.bufferedAmount = 0;
    for (let i = 0; i < 5; i++) {
      s.tick();
      s.after(20);
    }
    expect(socket.closed).to.equal(undefined);
    expect(socket.frames).to.have.length(6);
  });

  it('stops its pump when the last viewer leaves', () => {
    const s = manualStream();
    const handle = s.stream.add(new FakeSocket(), 25);
    expect(s.pumpPeriod).to.equal(20); // twice its rate
    handle.remove();
    expect(s.pumpPeriod).to.equal(0);
  });
});

/** Messages of one WebSocket, awaited in order. */
class Inbox {
  readonly #queue: unknown[] = [];
  readonly #waiting: ((m: unknown) => void)[] = [];
  constructor(socket: WebSocket) {
    socket.on('message', (data) => {
      const m: unknown = JSON.parse(String(data));
      const w = this.#waiting.shift();
      if (w) w(m);
      else this.#queue.push(m);
    });
  }
  next<T>(): Promise<T> {
    if (this.#queue.length) return Promise.resolve(this.#queue.shift() as T);
    return new Promise((resolve) => this.#waiting.push(resolve as (m: unknown) => void));
  }
  /** The next message that satisfies `test`. */
  async until<T>(test: (m: T) => boolean): Promise<T> {
    for (;;) {
      const m = await this.next<T>();
      if (test(m)) return m;
    }
  }
}

describe('WebSocket /stream/state on a listening twin', function () {
  this.timeout(20000);
  let twin: Twin;
  let base: string;
  let recordsDir: string;
  const sockets: WebSocket[] = [];

  const connect = async (query = '?rate=50') => {
    const socket = new WebSocket(`${base.replace('http', 'ws')}/stream/state${query}`);
    sockets.push(socket);
    const inbox = new Inbox(socket);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    return { socket, inbox };
  };

  before(async () => {
    recordsDir = await mkdtemp(path.join(os.tmpdir(), 'poppy-stream-'));
    twin = await openTwin('ergo-jr', { recordsDir });
    await twin.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(twin.app.server.address() as { port: number }).port}`;
  });
  after(async () => {
    for (const s of sockets) s.terminate();
    await twin.close();
    await rm(recordsDir, { recursive: true, force: true });
  });

  it('says hello with the motors, then streams the state the REST API reports', async () => {
    const { inbox } = await connect();
    const hello = await inbox.next<RobotDescription>();
    expect(hello.type).to.equal('hello');
    expect(hello.motors.map((m) => m.name)).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    expect(hello.motors[1]).to.include({ lowerLimit: 90, upperLimit: -125 });
    // The angle frame the view poses the shadow's ghost with (user degrees to the URDF joint).
    expect(hello.motors[1]!.frame).to.deep.equal({ orientation: 'indirect', offset: 0 });
    expect(hello.chains).to.deep.equal(['chain']);
    const first = await inbox.next<RobotState>();
    expect(first.type).to.equal('state');

    await twin.post('/motors/m1/registers/compliant/value.json', false);
    await twin.post('/motors/m1/goto.json', { position: 40, duration: 0.5 });
    await twin.advance(1);
    const api = (await twin.get('/motors/m1/registers/present_position/value.json')).json() as {
      present_position: number;
    };
    const ticks = twin.robot.ticks;
    const state = await inbox.until<RobotState>((m) => m.type === 'state' && m.tick >= ticks);
    expect(state.present[0]).to.equal(api.present_position);
    expect(state.present[0]).to.be.closeTo(40, 2);
    expect(state.compliant[0]).to.equal(false);
    expect(state.joint[0]).to.be.closeTo((40 * Math.PI) / 180, 0.04); // m1 is direct, offset 0
    expect(state.markers).to.deep.equal([]); // the detector runs; no card is in view
  });

  it('shows running primitives and moves being recorded', async () => {
    const { inbox } = await connect();
    await twin.get('/primitives/dance/start.json');
    await twin.post('/records/stream-test/record.json');
    await twin.advance(0.1);
    const ticks = twin.robot.ticks;
    const state = await inbox.until<RobotState>((m) => m.type === 'state' && m.tick >= ticks);
    expect(state.primitives.running).to.include('dance');
    expect(state.records.recording).to.deep.equal(['stream-test']);
    await twin.get('/primitives/dance/stop.json');
    await twin.post('/records/stream-test/save.json');
    await twin.post('/records/stream-test/delete.json');
  });

  it('answers a bad rate with a JSON 400 before the upgrade, and a bad message with an error message', async () => {
    const refused = new WebSocket(`${base.replace('http', 'ws')}/stream/state?rate=500`);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      refused.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += String(chunk)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      refused.on('open', () => reject(new Error('a bad rate was accepted')));
    });
    refused.on('error', () => undefined);
    expect(answer.status).to.equal(400);
    expect(JSON.parse(answer.body)).to.include({
      error: 'rate must be a number of frames per second above 0 and at most 50',
    });

    const { socket, inbox } = await connect('?rate=5');
    await inbox.next(); // hello
    socket.send('{"rate": "fast"}');
    const error = await inbox.until<{ type: string; error: string; tip: string }>((m) => m.type === 'error');
    expect(error.error).to.match(/rate must be a number/);
    expect(error.tip).to.match(/"rate": 20/);
    socket.send('not json');
    expect((await inbox.until<{ type: string; error: string }>((m) => m.type === 'error')).error).to.equal(
      'a message must be JSON',
    );
    expect(socket.readyState).to.equal(WebSocket.OPEN);
  });

  it('GET /stream/state.json gives one state for clients that poll; GET / links to the view', async () => {
    const state = (await twin.get('/stream/state.json')).json() as RobotState;
    expect(state.type).to.equal('state');
    expect(state.present).to.have.length(6);
    const index = await twin.get('/');
    expect(index.body).to.include('<a href="/ui/">');
    expect(index.body).to.include('<code>GET /stream/state</code>');
    expect(index.body).to.include('<code>GET /motors/list.json</code>');
  });

  it('serves the view: page, bundled script, robot description and scene', async () => {
    const page = await twin.get('/ui/');
    expect(page.headers['content-type']).to.match(/text\/html/);
    expect(page.body).to.include('<script type="module" src="/ui/app.js">');
    const script = await twin.get('/ui/app.js');
    expect(script.statusCode).to.equal(200);
    expect(script.headers['content-type']).to.match(/javascript/);
    expect(script.body).to.not.match(/\bfrom\s*["'](three|urdf-loader)/); // bundled, nothing left to fetch
    expect(script.body.length).to.be.greaterThan(100_000);
    const scene = (await twin.get('/ui/scene.json')).json() as SceneDescription;
    expect(scene.urdf.root).to.equal('base_link');
    expect(scene.urdf.joints.map((j) => j.name)).to.include.members(['m1', 'm6']);
    expect(scene.camera?.link).to.equal('tip');
    const description = (await twin.get('/ui/robot.json')).json() as RobotDescription;
    expect(description.robot).to.equal('ergo-jr');
    expect(description.features).to.deep.equal({ cameraFrame: true, cards: true });
  });
});
