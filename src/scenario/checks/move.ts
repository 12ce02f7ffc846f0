/**
 * Every check of a move: its data (limits, speed, acceleration, duration), then its replay on the twin (tracking,
 * replay duration, torque headroom, self-collision, table collision). Against a remote server the replay is
 * watched over HTTP: end pose and torque headroom; collisions need the twin's physics and are skipped.
 */
import { type Move, moveDuration, moveToJson } from '../../records/move.ts';
import type { Motor } from '../../robot/motor.ts';
import { type CheckResult, type Finding, checkResult, fmt, skippedCheck } from '../result.ts';
import { type Target, ok } from '../target.ts';
import type { Twin } from '../twin.ts';
import type { ContactRules } from './contacts.ts';
import { type MoveDataOptions, moveDataChecks } from './move-data.ts';
import {
  RunObserver,
  type TickSample,
  type TorqueOptions,
  type TrackingOptions,
  torqueHeadroomCheck,
  trackingCheck,
} from './observe.ts';

export interface MoveCheckOptions extends MoveDataOptions, TorqueOptions, TrackingOptions {
  /** Replay speed (default 1; negative plays backwards). */
  readonly speed?: number;
  /** Torque limit (%) set on the move's motors before the replay; default: as the robot starts. */
  readonly torqueLimit?: number;
  /** Largest difference between the replay's duration and the recorded one / |speed|, percent (default 5). */
  readonly maxDurationErrorPct?: number;
  /** Replay on the target after the data checks (default true). */
  readonly replay?: boolean;
}

const TICK_S = 0.02;
const SETTLE_S = 0.3;

export async function checkMoveOnTwin(
  twin: Twin,
  rules: ContactRules,
  name: string,
  move: Move,
  opts: MoveCheckOptions = {},
): Promise<CheckResult[]> {
  const data = moveDataChecks(move, twin.robot.motors, opts);
  if (opts.replay === false) return data;
  const unknown = move.motors.filter((m) => !twin.robot.hasMotor(m));
  if (unknown.length)
    return [...data, skippedCheck('replay', `not replayed: unknown motor(s) ${unknown.join(', ')}`)];
  const motors = move.motors.map((m) => twin.robot.motor(m));
  const torqueLimits = motors.map((m) => m.commands.torqueLimit);
  if (opts.torqueLimit !== undefined) for (const m of motors) m.set('torqueLimit', opts.torqueLimit);
  const speed = opts.speed ?? 1;
  await twin.records.upload(name, moveToJson(move));
  let player: ReturnType<typeof twin.records.replay>;
  const observer = new RunObserver(twin, motors, rules, () => {
    const timing = player?.timing;
    if (timing?.phase !== 'play' || timing.playStart === undefined) return undefined;
    return player!.plan.positionsAt(twin.backend.clock.now() - timing.playStart);
  });
  const t0 = twin.backend.clock.now();
  try {
    await twin.records.play(name, speed);
    player = twin.records.replay(name)!;
    const limit = 5 + moveDuration(move) / Math.abs(speed) + 10;
    while (player.running && twin.backend.clock.now() - t0 < limit) await twin.advance(TICK_S);
    if (player.running) await twin.records.stop(name);
    await twin.advance(SETTLE_S);
  } finally {
    observer.stop();
    if (opts.torqueLimit !== undefined) motors.forEach((m, i) => m.set('torqueLimit', torqueLimits[i]!));
  }
  const { playStart, end } = player.timing;
  const expected = player.plan.duration;
  const took = playStart !== undefined && end !== undefined ? end - playStart : NaN;
  const errorPct = (Math.abs(took - expected) / Math.max(expected, 1e-9)) * 100;
  const maxPct = opts.maxDurationErrorPct ?? 5;
  const durationFindings: Finding[] =
    Number.isFinite(errorPct) && errorPct <= maxPct
      ? []
      : [
          {
            message: `the replay took ${fmt(took, 3)} s instead of ${fmt(expected, 3)} s: ${fmt(errorPct, 1)} % off, over the ${fmt(maxPct, 1)} % allowed`,
            value: took,
            limit: expected,
            margin: Math.abs(took - expected),
            unit: 's',
          },
        ];
  return [
    ...data,
    trackingCheck(observer.samples, motors, opts),
    checkResult(
      'replay duration',
      `replayed at speed ${speed} in ${fmt(took, 3)} s (expected ${fmt(expected, 3)} s) after ${fmt((playStart ?? t0) - t0, 2)} s of travel to the start`,
      durationFindings,
      { replay_s: took, expected_s: expected, travel_s: (playStart ?? t0) - t0 },
    ),
    torqueHeadroomCheck(observer.samples, motors, opts),
    ...observer.collisions(rules),
  ];
}

/**
 * A move already on a running server (sim or real): data checks, then a replay watched by polling positions and
 * loads: the end pose must match the last frame and the loads must keep their headroom.
 */
export async function checkMoveOnRemote(
  target: Target,
  motors: readonly Motor[],
  name: string,
  move: Move,
  opts: MoveCheckOptions & { pollS?: number; endToleranceDeg?: number } = {},
): Promise<CheckResult[]> {
  const data = moveDataChecks(move, motors, opts);
  const skipped = [
    skippedCheck('self-collision', 'needs the twin: the physics contacts are not visible over HTTP'),
    skippedCheck('table collision', 'needs the twin: the physics contacts are not visible over HTTP'),
  ];
  if (opts.replay === false) return [...data, ...skipped];
  const listed = (await ok(target.get('/records/list.json'), 'GET /records/list.json')).moves as string[];
  if (!listed.includes(name))
    return [
      ...data,
      skippedCheck('replay', `"${name}" is not on ${target.label}: deploy it first`),
      ...skipped,
    ];
  const used = motors.filter((m) => move.motors.includes(m.name));
  const speed = opts.speed ?? 1;
  const poll = opts.pollS ?? 0.1;
  const samples: TickSample[] = [];
  const t0 = target.now();
  await ok(target.post(`/records/${name}/play.json`, { speed }), `play ${name}`);
  const limit = 5 + moveDuration(move) / Math.abs(speed) + 10;
  const player = `_${name}_player`;
  for (;;) {
    await target.wait(poll);
    const regs = async (r: string) =>
      (await ok(target.get(`/motors/registers/${r}/list.json`), r))[r] as Record<string, number>;
    const [position, load, limitPct] = [
      await regs('present_position'),
      await regs('present_load'),
      await regs('torque_limit'),
    ];
    samples.push({
      time: target.now() - t0,
      position: used.map((m) => position[m.name]!),
      load: used.map((m) => load[m.name]!),
      torqueLimit: used.map((m) => limitPct[m.name]!),
    });
    const running = (await ok(target.get('/primitives/running/list.json'), 'running primitives'))
      .primitives as string[];
    if (!running.includes(player) || target.now() - t0 > limit) break;
  }
  const last = move.frames[speed > 0 ? move.frames.length - 1 : 0]!;
  const final = samples[samples.length - 1]!;
  const tolerance = opts.endToleranceDeg ?? 3;
  const findings: Finding[] = [];
  used.forEach((m, i) => {
    const want = last.positions.get(m.name)![0];
    const off = Math.abs(final.position[i]! - want);
    if (off > tolerance)
      findings.push({
        message: `at the end (t=${fmt(final.time)} s) ${m.name} is at ${fmt(final.position[i]!)} deg instead of ${fmt(want)} deg: ${fmt(off)} deg off, over the ${fmt(tolerance)} deg allowed`,
        time: final.time,
        where: m.name,
        value: final.position[i],
        limit: tolerance,
        margin: off - tolerance,
        unit: 'deg',
      });
  });
  return [
    ...data,
    checkResult(
      'replay end pose',
      `replayed on ${target.label} in ${fmt(final.time, 1)} s; end pose within ${fmt(tolerance)} deg`,
      findings,
    ),
    torqueHeadroomCheck(samples, used, { ...opts, windowS: 0 }),
    ...skipped,
  ];
}
