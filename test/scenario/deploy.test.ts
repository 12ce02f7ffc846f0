/**
 * The deploy gate against a running server (in-process, listening on a free port): it refuses a bad move naming
 * the failed checks, installs a good one (listed, and it plays), --force installs with the failures kept; the
 * upload route's own rules; a scenario run against the server by URL.
 */
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parseMoveFile, moveToJson, serializeMove } from '../../src/records/move.ts';
import { runScenario } from '../../src/scenario/api.ts';
import { deploy, identifyRobot } from '../../src/scenario/deploy.ts';
import { remoteTarget } from '../../src/scenario/target.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';
import wave from '../../scenarios/ergo-jr-wave.scenario.ts';
import { ERGO_REST, bump, gentleErgoMove, makeMove } from './helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const WAVE = path.join(ROOT, 'scenarios/moves/ergo-jr-wave.record');

describe('deploy gate', function () {
  this.timeout(60_000);
  let server: RobotServer;
  let url: string;
  let records: string;
  let tmp: string;

  before(async () => {
    records = await mkdtemp(path.join(os.tmpdir(), 'deploy-target-'));
    tmp = await mkdtemp(path.join(os.tmpdir(), 'deploy-moves-'));
    // Manual speed: the target's time moves only when a test advances it.
    server = await createRobotServer({
      backend: 'sim',
      robot: 'ergo-jr',
      speed: 'manual',
      recordsDir: records,
    });
    url = await server.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await server.close();
    await rm(records, { recursive: true, force: true });
    await rm(tmp, { recursive: true, force: true });
  });

  const list = async () =>
    ((await (await fetch(`${url}/records/list.json`)).json()) as { moves: string[] }).moves;
  const write = async (name: string, move: ReturnType<typeof makeMove>) => {
    const file = path.join(tmp, `${name}.record`);
    await writeFile(file, serializeMove(move));
    return file;
  };

  it('recognises the robot a server drives from its /robot.json', async () => {
    expect(await identifyRobot(remoteTarget(url))).to.equal('ergo-jr');
  });

  it('refuses a move that fails a check, saying which, and installs nothing', async () => {
    const file = await write(
      'too-far',
      makeMove(2, (t) => ({ ...ERGO_REST, m3: 35 + 75 * bump(t / 2) })),
    );
    const outcome = await deploy(file, { to: url });
    expect(outcome).to.include({ robot: 'ergo-jr', name: 'too-far', installed: false, listed: false });
    expect(outcome.failed.map((c) => c.name)).to.include('too-far: joint limits');
    expect(outcome.failed[0]!.findings[0]!.message).to.match(/^m3 leaves its range .* at t=0\.6\d s/);
    expect(await list()).to.not.include('too-far');
    expect(await readdir(records)).to.deep.equal([]);
  });

  it('installs a move that passes every check: listed, saved in the pypot format, and it plays', async () => {
    const outcome = await deploy(WAVE, { to: url });
    expect(outcome.failed).to.deep.equal([]);
    expect(outcome.report.checks.length).to.be.at.least(9);
    expect(outcome).to.include({ name: 'ergo-jr-wave', installed: true, listed: true });
    expect(await list()).to.include('ergo-jr-wave');
    const saved = parseMoveFile(await readFile(path.join(records, 'ergo-jr-wave.record'), 'utf8'), 'saved');
    expect(moveToJson(saved)).to.deep.equal(moveToJson(parseMoveFile(await readFile(WAVE, 'utf8'), 'wave')));
    const play = await fetch(`${url}/records/ergo-jr-wave/play.json`, { method: 'POST' });
    expect(play.status).to.equal(200);
    await server.simulation!.advance(0.5);
    expect(server.records.isPlaying('ergo-jr-wave')).to.equal(true);
    await server.simulation!.advance(5);
    expect(server.records.isPlaying('ergo-jr-wave')).to.equal(false);
  });

  it('with force, installs a failing move and still reports its failures', async () => {
    const file = await write(
      'too-fast',
      makeMove(1, (t) => ({ ...ERGO_REST, m1: t >= 0.5 ? 40 : 0 })),
    );
    const outcome = await deploy(file, { to: url, force: true, checks: { replay: false } });
    expect(outcome.failed.map((c) => c.name)).to.deep.equal(['too-fast: speed', 'too-fast: acceleration']);
    expect(outcome).to.include({ installed: true, listed: true });
  });

  it('the deploy command exits 1 refusing, 0 installing, and prints why', async () => {
    const { execFile } = await import('node:child_process');
    const run = (args: string[]) =>
      new Promise<{ code: number; out: string }>((resolve) =>
        execFile(
          process.execPath,
          ['--import', 'tsx', path.join(ROOT, 'src/scenario/deploy-cli.ts'), ...args],
          { cwd: ROOT },
          (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, out: stdout + stderr }),
        ),
      );
    const bad = await write(
      'bad-cli',
      makeMove(1, (t) => ({ ...ERGO_REST, m3: 35 + 75 * bump(t) })),
    );
    const refused = await run([bad, '--to', url]);
    expect(refused.code, refused.out).to.equal(1);
    expect(refused.out).to.match(
      /REFUSED: "bad-cli" was not installed on \S+: bad-cli: joint limits(, [^\n]*)? failed/,
    );
    expect(refused.out).to.contain('  - m3 leaves its range [-90.00, 90.00] deg at t=0.3');
    const good = await write('gentle-cli', gentleErgoMove(2));
    const installed = await run([good, '--to', url]);
    expect(installed.code, installed.out).to.equal(0);
    expect(installed.out).to.contain('INSTALLED "gentle-cli"');
    expect(await list()).to.include('gentle-cli');
  });

  it('upload.json refuses bad names, bad data and unknown motors with {error, tip, details}, changing nothing', async () => {
    const before = await readdir(records);
    const post = (name: string, body: unknown) =>
      fetch(`${url}/records/${name}/upload.json`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const good = moveToJson(gentleErgoMove(0.2));
    for (const [name, body, pattern] of [
      ['-bad', good, /Invalid move name/],
      ['nodata', {}, /framerate is missing/],
      [
        'badspeed',
        { framerate: 50, positions: { '0': { m1: [0, 'x'] } } },
        /speed "x" is not a finite number/,
      ],
      ['wheels', { framerate: 50, positions: { '0': { wheel: [0, 0] } } }, /motors this robot does not have/],
    ] as const) {
      const res = await post(name, body);
      expect(res.status, name).to.equal(400);
      const answer = (await res.json()) as Record<string, string>;
      expect(answer).to.include.keys('error', 'tip', 'details');
      expect(answer.error, name).to.match(pattern);
    }
    expect(await readdir(records)).to.deep.equal(before);
    const ok = await post('tiny', good);
    expect(ok.status).to.equal(200);
    expect(await ok.json()).to.deep.equal({ tiny: 'uploaded', frames: 11 });
  });

  it('runs a scenario against the server by URL: data checks and the replay watched over HTTP', async () => {
    const upload = await fetch(`${url}/records/ergo-jr-wave/upload.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: await readFile(WAVE, 'utf8'),
    });
    expect(upload.status).to.equal(200);
    const sim = server.simulation!;
    const result = await runScenario(wave, path.join(ROOT, 'scenarios'), {
      url,
      // The server's sim time moves only while the scenario waits: no real-time sleeping.
      remote: { sleep: (s) => sim.advance(s), now: () => server.backend.clock.now() },
    });
    expect(result.target).to.equal(url);
    const status = Object.fromEntries(result.checks.map((c) => [c.name, c.status]));
    expect(status).to.deep.equal({
      'wave: joint limits': 'pass',
      'wave: speed': 'pass',
      'wave: acceleration': 'pass',
      'wave: duration': 'pass',
      'wave: replay end pose': 'pass',
      'wave: torque headroom': 'pass',
      'wave: self-collision': 'skipped',
      'wave: table collision': 'skipped',
      'wave: ends where it starts': 'pass',
    });
    expect(result.status).to.equal('pass');
  });
});
