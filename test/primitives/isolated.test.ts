/**
 * Custom primitives in worker threads: every way a module can misbehave ends that primitive only. While it
 * misbehaves the server keeps answering (a register read), and the primitive shows why it stopped over REST.
 * Wall-clock limits are small here (the watchdog and the call timeout are wall-clock by nature: a busy thread has no
 * robot time); the sim clock is driven by the test.
 */
import { expect } from 'chai';
import { mkdtemp, rm, writeFile, copyFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { json, simServer, type TestServer } from '../helpers.ts';
import { recordingLogger } from './probes.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A primitive named `name` whose class body is `body` (update at 10 Hz). */
const prim = (name: string, body: string, top = '') =>
  `${top}\nexport default (ctx: any, lib: any) => new (class extends lib.Primitive {\n  constructor() { super(ctx, '${name}', { frequency: 10 }); }\n  ${body}\n})();\n`;

const MODULES: Record<string, string> = {
  'sync_throw.ts': prim('sync_throw', "protected override update() { throw new Error('sync boom'); }"),
  'async_throw.ts': prim(
    'async_throw',
    "protected override async update() { await null; throw new Error('async boom'); }",
  ),
  'setup_throw.ts': prim('setup_throw', "protected override setup() { throw new Error('setup boom'); }"),
  'teardown_throw.ts': prim(
    'teardown_throw',
    "protected override async teardown() { throw new Error('teardown boom'); }",
  ),
  'timer_throw.ts': prim(
    'timer_throw',
    "protected override setup() { setTimeout(() => { throw new Error('timer boom'); }, 0); }",
  ),
  'exits.ts': prim('exits', 'protected override update() { process.exit(0); }'),
  'busy.ts': prim('busy', 'protected override update() { for (;;) {} }'),
  'hog.ts': prim(
    'hog',
    'readonly hoard: unknown[] = [];\n  protected override update() { for (;;) this.hoard.push(new Array(1e5).fill(Math.random())); }',
  ),
  'never.ts': prim(
    'never',
    "override methods() { return [...super.methods(), { name: 'wait_forever', params: [], call: () => new Promise(() => {}) }]; }",
  ),
  'busy_load.ts': prim('busy_load', '', 'for (;;) {}'),
  'exit_load.ts': prim('exit_load', '', 'process.exit(3);'),
};

describe('primitives: custom modules isolated in worker threads', function () {
  this.timeout(60000);
  let dir: string;
  let s: TestServer;
  let log: ReturnType<typeof recordingLogger>;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'poppy-isolated-'));
    await copyFile(path.join(ROOT, 'examples/primitives/sinus.ts'), path.join(dir, 'sinus.ts'));
    for (const [file, text] of Object.entries(MODULES)) await writeFile(path.join(dir, file), text);
    log = recordingLogger();
    s = await simServer('ergo-jr', {
      primitivesDir: dir,
      logger: log,
      primitiveLimits: {
        heartbeatMs: 50,
        unresponsiveMs: 500,
        loadTimeoutMs: 8000,
        callTimeoutMs: 500,
        memoryMb: 32,
      },
    });
  });
  after(async () => {
    await s?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Advances sim time (and lets the worker answer) until `done` or 15 s of wall time; reads a register meanwhile. */
  async function until(done: () => Promise<boolean>): Promise<void> {
    const deadline = performance.now() + 15000;
    while (!(await done())) {
      if (performance.now() > deadline) throw new Error('timed out');
      await s.advance(0.04);
      const res = await s.get('/motors/m1/registers/present_position/value.json');
      expect(res.statusCode, 'the server answers while a primitive misbehaves').to.equal(200);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  const status = async (name: string) => json(await s.get(`/primitives/${name}/status.json`));

  it('loads in the background: start-up does not wait, broken modules are reported with the reason', async () => {
    await s.primitives.customLoaded();
    const problems = json(await s.get('/primitives/problems.json')).problems as {
      file: string;
      reason: string;
    }[];

    const byFile = Object.fromEntries(problems.map((p) => [path.basename(p.file), p.reason]));
    expect(byFile['busy_load.ts']).to.match(/did not finish within 8 s/);
    expect(byFile['exit_load.ts']).to.match(/exited \(code 3\)/);
    const names = json(await s.get('/primitives/list.json')).primitives as string[];
    for (const n of ['sinus', 'sync_throw', 'async_throw', 'busy', 'hog', 'never'])
      expect(names).to.include(n);
    expect(names).to.not.include('busy_load');
    expect(log.has('error', /busy_load\.ts skipped/)).to.equal(true);
  });

  it('a well-behaved one moves the robot through the same API, with properties and methods', async () => {
    expect(json(await s.get('/primitives/sinus/status.json'))).to.deep.equal({
      primitive: 'sinus',
      state: 'stopped',
      running: false,
      last_error: null,
      isolated: true,
    });
    expect(json(await s.post('/primitives/sinus/properties/amplitude/value.json', 25))).to.deep.equal({
      'sinus.amplitude': 25,
    });
    expect(json(await s.get('/primitives/sinus/start.json'))).to.deep.equal({ sinus: 'started' });
    const goals = new Set<number>();
    await until(async () => {
      goals.add(json(await s.get('/motors/m1/registers/goal_position/value.json')).goal_position as number);
      return goals.size > 5;
    });
    expect(json(await s.get('/primitives/sinus/stop.json'))).to.deep.equal({ sinus: 'stopped' });
    expect((await status('sinus')).last_error).to.equal(null);
  });

  const cases: [string, RegExp][] = [
    ['sync_throw', /^update: sync boom/],
    ['async_throw', /^update: async boom/],
    ['setup_throw', /^setup: setup boom/],
    ['timer_throw', /^worker: uncaught exception: timer boom/],
    ['exits', /^worker: its thread exited \(code 0\)/],
    ['busy', /^worker: stopped answering.*busy loop/],
    ['hog', /^worker: ran out of memory/],
  ];
  for (const [name, reason] of cases) {
    it(`${name}: ends that primitive only, its reason over REST and in the log`, async () => {
      expect(json(await s.get(`/primitives/${name}/start.json`))).to.deep.equal({ [name]: 'started' });
      await until(async () => (await status(name)).state === 'stopped');
      const st = await status(name);
      expect(st.last_error).to.match(reason);
      expect(st.running).to.equal(false);
      expect(log.has('error', new RegExp(`primitive ${name}: .*(failed|stopped)`))).to.equal(true);
      expect(json(await s.get('/primitives/running/list.json')).primitives).to.not.include(name);
    });
  }

  it('teardown_throw: the teardown error is its last error', async () => {
    await s.get('/primitives/teardown_throw/start.json');
    await until(async () => (await status('teardown_throw')).state === 'running');
    await s.get('/primitives/teardown_throw/stop.json');
    expect((await status('teardown_throw')).last_error).to.match(/^teardown: teardown boom/);
  });

  it('a method that never settles answers 504; a dead primitive starts again in a new worker', async () => {
    const res = await s.post('/primitives/never/methods/wait_forever/args.json');
    expect(res.statusCode).to.equal(504);
    expect(json(res)).to.have.keys('error', 'tip', 'details');
    expect(json(await s.get('/primitives/exits/start.json'))).to.deep.equal({ exits: 'started' });
    await until(async () => (await status('exits')).state === 'stopped');
    expect((await status('exits')).last_error).to.match(/exited/);
  });
});
