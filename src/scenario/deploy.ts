/**
 * The deploy gate: learn which robot a server drives, check the move on the twin of that robot, and install it on
 * the server (POST /records/<name>/upload.json, beyond the v4 API) only when every check passes; with `force`,
 * install anyway and say what failed.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { BUILTIN_ROBOTS, loadRobotConfig } from '../config/robot-config.ts';
import { type Move, moveToJson, validMoveName } from '../records/move.ts';
import { defineScenario, loadMove, runScenario } from './api.ts';
import type { MoveCheckOptions } from './checks/move.ts';
import type { CheckResult, ScenarioResult } from './result.ts';
import { type Target, ok, remoteTarget } from './target.ts';

/**
 * The built-in robot whose motor names are exactly those the server lists in GET /robot.json (pypot's robot.json
 * names no robot; its motors do). `extra` adds robot config paths to compare with.
 */
export async function identifyRobot(target: Target, extra: readonly string[] = []): Promise<string> {
  const body = await ok(target.get('/robot.json'), `GET ${target.label}/robot.json`);
  const motors = ((body.motors ?? []) as { name?: unknown }[]).map((m) => String(m.name)).sort();
  const key = motors.join(',');
  for (const robot of [...BUILTIN_ROBOTS, ...extra]) {
    const config = await loadRobotConfig(robot);
    if (
      config.motors
        .map((m) => m.name)
        .sort()
        .join(',') === key
    )
      return robot;
  }
  throw new Error(
    `${target.label} drives motors ${motors.join(', ') || '(none)'}, which match no known robot (${BUILTIN_ROBOTS.join(', ')}); name its config with --robot`,
  );
}

export interface DeployOptions {
  /** Base URL of the robot's server. */
  readonly to: string;
  readonly force?: boolean;
  /** Name to install it as (default: the file name without .record, or the move name). */
  readonly name?: string;
  /** Skip the identification: the robot's built-in name or config path. */
  readonly robot?: string;
  /** Where a move given by name is looked up (default ./records). */
  readonly recordsDir?: string;
  readonly checks?: MoveCheckOptions;
  readonly fetch?: typeof fetch;
  readonly log?: (line: string) => void;
}

export interface DeployOutcome {
  readonly robot: string;
  readonly name: string;
  readonly report: ScenarioResult;
  readonly failed: readonly CheckResult[];
  readonly installed: boolean;
  /** The move shows in the server's GET /records/list.json after the upload. */
  readonly listed: boolean;
}

/** `move`: a .record file, or a move name in `recordsDir`. */
export async function deploy(move: string, opts: DeployOptions): Promise<DeployOutcome> {
  const log = opts.log ?? (() => {});
  const target = remoteTarget(opts.to, { fetch: opts.fetch });
  const isFile = await access(move).then(
    () => true,
    () => false,
  );
  const name = opts.name ?? (isFile ? path.basename(move).replace(/\.record$/, '') : move);
  if (!validMoveName(name))
    throw new Error(
      `"${name}" is not a valid move name (letters, digits, _ . -, up to 64); give one with --name`,
    );
  const data: Move = await loadMove(
    isFile ? { file: path.resolve(move) } : { name: move, recordsDir: opts.recordsDir },
    '.',
  );
  const robot = opts.robot ?? (await identifyRobot(target));
  log(
    `${opts.to} drives the ${robot}: checking "${name}" (${data.frames.length} frames of ${data.motors.join(', ')}) on its twin`,
  );
  const report = await runScenario(
    defineScenario({
      name: `deploy ${name}`,
      robot,
      run: (t) => t.checkMove(name, data, opts.checks).then(() => {}),
    }),
    process.cwd(),
    { file: isFile ? move : `records/${name}` },
  );
  if (report.error) throw new Error(`the checks could not run: ${report.error}`);
  const failed = report.checks.filter((c) => c.status === 'fail' || c.status === 'error');
  if (failed.length && !opts.force) return { robot, name, report, failed, installed: false, listed: false };
  const answer = await target.post(`/records/${encodeURIComponent(name)}/upload.json`, moveToJson(data));
  if (answer.status !== 200)
    throw new Error(`${opts.to} refused the upload: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  const list = (await ok(target.get('/records/list.json'), 'GET /records/list.json')).moves as string[];
  return { robot, name, report, failed, installed: true, listed: list.includes(name) };
}
