/**
 * The guard (--guard with --shadow) over the bus emulator on a real pseudo-terminal, from outside over HTTP: an IK
 * goto that drives the Ergo Jr's tip into the table is refused with 409 naming the links, the time of contact and the
 * motors' positions then, and nothing moves; the built-in postures pass; ?force=true moves anyway and says so in the
 * log; ?force= other than a boolean is 400. Wall time is inherent (a serial bus in real time): waits are bounded polls.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { createRobotServer } from '../../src/server.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { type ShadowRig, startShadowRig } from './emulator-process.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-guard-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** The Ergo Jr's built-in postures (src/primitives/builtins/ergo-jr.ts), in the order the test goes through them. */
const POSTURES: [string, number[]][] = [
  ['base_posture', [0, 0, 0, 0, 0, 0]],
  ['curious_posture', [0, -15, 40, 0, -35, -60]],
  ['tetris_posture', [0, -90, 90, 0, -90, -90]],
  ['rest_posture', [0, -90, 35, 0, 55, -5]],
];
const MOTORS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];
/**
 * Ahead of the robot (-y), at the edge of its reach and 5 cm under the disc it stands on: the stretched arm's lamp
 * meets the table. (Beside it, the IK bends the arm low over the 150 mm disc, which the forearm meets first; past its
 * reach the target is refused with 422 before the guard is asked.)
 */
const INTO_TABLE = { xyz: '0,-0.2,-0.05', duration: 2, wait: false };

describe('the guard beside the Ergo Jr on the bus emulator', function () {
  this.timeout(120000);
  let rig: ShadowRig;
  const call = (method: string, p: string, body?: unknown) => rig.call(method, p, body);
  const positions = async () =>
    (await call('GET', '/motors/registers/present_position/list.json')).body.present_position as Record<
      string,
      number
    >;
  const goals = async () =>
    (await call('GET', '/motors/registers/goal_position/list.json')).body.goal_position as Record<
      string,
      number
    >;

  before(async function () {
    this.timeout(60000);
    rig = await startShadowRig({ guard: true, infoLogs: true, recordsDir: path.join(tmp, 'records') });
    for (const m of MOTORS)
      expect((await call('POST', `/motors/${m}/registers/compliant/value.json`, false)).status).to.equal(200);
    // Upright, clear of the table: the limp arm may have folded onto it already, and the guard refuses only a contact
    // that a move makes (one there at its start is not new). Forced: getting up off the table may itself touch it.
    const upright = { motors: MOTORS, positions: MOTORS.map(() => 0), duration: 1, wait: true };
    const stood = await call('POST', '/motors/goto.json?force=true', upright);
    expect(stood.status, JSON.stringify(stood.body)).to.equal(200);
  });
  after(() => rig?.close());

  it('refuses an IK goto that drives the tip into the table: 409 naming the links, the time, the positions', async () => {
    const before = await goals();
    const res = await call('POST', '/ik/chain/goto.json', INTO_TABLE);
    expect(res.status, JSON.stringify(res.body)).to.equal(409);
    expect(res.body.error, JSON.stringify(res.body)).to.match(/tip touching table|table touching tip/);
    expect(res.body.tip).to.match(/force=true/);
    const details = res.body.details as string;
    const at = Number(/at ([\d.]+) s,/.exec(details)?.[1]);
    expect(at, details).to.be.above(0).and.at.most(2.2);
    for (const m of MOTORS) expect(details, m).to.match(new RegExp(`${m} -?[\\d.]+`));
    // Nothing was sent: the goals are those of before, a cycle later too.
    const time = async () => (await call('GET', '/shadow/status.json')).body.time as number;
    const t0 = await time();
    await until('a few bus cycles', async () => ((await time()) > t0 + 0.1 ? true : undefined));
    expect(await goals()).to.deep.equal(before);
  });

  it('accepts the built-in postures, one after the other', async () => {
    for (const [name, pose] of POSTURES) {
      const res = await call('POST', '/motors/goto.json', {
        motors: MOTORS,
        positions: pose,
        duration: 2,
        wait: true,
      });
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).to.equal(200);
      // It went there (a servo at 70 % torque settles a while after the goto's end).
      await until(`${name} reached`, async () => {
        const at = await positions();
        return MOTORS.every((m, i) => Math.abs(at[m]! - pose[i]!) < 8) ? true : undefined;
      });
    }
  });

  /** A move from upright to `to` and back over `seconds`, saved as pypot saves it (50 frames a second). */
  function saveMove(name: string, to: number[], seconds: number): void {
    const positions: Record<string, Record<string, [number, number]>> = {};
    for (let k = 0; k <= seconds * 50; k++) {
      const t = k / 50;
      const s = Math.sin((Math.PI * t) / seconds); // 0 -> 1 -> 0
      positions[String(t)] = Object.fromEntries(MOTORS.map((m, i) => [m, [to[i]! * s, 0]]));
    }
    writeFileSync(path.join(tmp, 'records', `${name}.record`), JSON.stringify({ framerate: 50, positions }));
  }

  it('refuses a replay that would drive the tip into the table, and replays an everyday one', async () => {
    const upright = { motors: MOTORS, positions: MOTORS.map(() => 0), duration: 1, wait: true };
    expect((await call('POST', '/motors/goto.json?force=true', upright)).status).to.equal(200);
    // Checked on the twin at rest: [0, 60, 40, 0, 0, 0] puts the tip on the table, [40, -20, 30, 0, 20, 0] touches nothing.
    saveMove('bow_into_table', [0, 60, 40, 0, 0, 0], 4);
    saveMove('look_around', [40, -20, 30, 0, 20, 0], 3);
    const before = await goals();
    const refused = await call('POST', '/records/bow_into_table/play.json', { speed: 1 });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(409);
    expect(refused.body.error).to.match(/tip touching table|table touching tip/);
    expect(refused.body.details).to.match(/the replay of "bow_into_table" at speed 1/);
    const played = await call('GET', '/primitives/running/list.json');
    expect(played.body.primitives as string[]).to.not.include('_bow_into_table_player');
    expect(await goals()).to.deep.equal(before);
    // Backwards too (the same path reversed), and a bad ?force= is a 400 before anything.
    expect((await call('POST', '/records/bow_into_table/play.json', { speed: -2 })).status).to.equal(409);
    expect((await call('POST', '/records/look_around/play.json?force=maybe', {})).status).to.equal(400);
    const ok = await call('POST', '/records/look_around/play.json', { speed: 1 });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    await until('the replay to end', async () =>
      ((await call('GET', '/primitives/running/list.json')).body.primitives as string[]).includes(
        '_look_around_player',
      )
        ? undefined
        : true,
    );
  });

  it('says 400 to ?force= that is not a boolean, and nothing moves', async () => {
    const before = await goals();
    const res = await call('POST', '/motors/m1/goto.json?force=yes', { position: 20, duration: 1 });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.match(/force=yes is not a boolean/);
    expect(await goals()).to.deep.equal(before);
  });

  it('moves anyway with ?force=true, and logs that the guard was skipped', async () => {
    const skipped = () => rig.logs.filter((l) => /^guard: skipped \(\?force=true\)/.test(l)).length;
    const before = skipped();
    const res = await call('POST', '/ik/chain/goto.json?force=true', { ...INTO_TABLE, duration: 1 });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(skipped()).to.equal(before + 1);
    const res2 = await call('POST', '/motors/goto.json', {
      motors: MOTORS,
      positions: POSTURES[3]![1],
      duration: 1.5,
      wait: true,
    });
    // Back from the table to the rest posture: a move away from a contact is not refused.
    expect(res2.status, JSON.stringify(res2.body)).to.equal(200);
  });
});

describe('--guard without --shadow', () => {
  it('is a configuration error saying what it needs', async () => {
    let err: unknown;
    try {
      await createRobotServer({ backend: 'sim', robot: 'ergo-jr', speed: 'manual', guard: true });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.match(/needs --backend=real --shadow/);
  });
});

describe('--shadow on the sim backend', () => {
  it('is a configuration error saying it needs the real backend', async () => {
    let err: unknown;
    try {
      await createRobotServer({ backend: 'sim', robot: 'ergo-jr', speed: 'manual', shadow: true });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.match(/needs --backend=real/);
  });
});
