/**
 * Who is in the classroom: `--classroom=<n>` (n twins of one robot, `<robot>-01`...) or a JSON file
 * `{"twins": [{"name", "robot", "port"?, "token"?}]}`. Every mistake stops start-up with one line naming the twin.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../core/errors.ts';
import { loadRobotConfig } from '../config/robot-config.ts';
import { newToken, tokenProblem } from '../http/access.ts';

export interface TwinSpec {
  /** In URLs (`/twins/<name>/`) and folder names: letters, digits, `-` and `_`. */
  readonly name: string;
  /** Built-in robot name or path to a robot config. */
  readonly robot: string;
  /** Its own port (0: any free port). */
  readonly port: number;
  /** The token that opens this twin (and no other); the teacher's opens every twin. None: no token asked. */
  readonly token?: string;
}

/** Most twins one classroom serves (each costs about 1/66 of a core moving: bench/README.md, "classroom"). */
export const MAX_TWINS = 200;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

const fileSchema = z.strictObject({
  twins: z
    .array(
      z.strictObject({
        name: z.string(),
        robot: z.string().min(1),
        port: z.number().int().optional(),
        token: z.string().optional(),
      }),
    )
    .min(1)
    .max(MAX_TWINS),
});

/**
 * The twins of `value` (a count or a file), on ports from `port` + 1 unless the file says. Checks names, robots and
 * ports; throws a ConfigError naming the first bad twin.
 */
export async function readRoster(
  value: string,
  defaults: { robot: string; port: number },
): Promise<TwinSpec[]> {
  const portOf = (i: number) => (defaults.port === 0 ? 0 : defaults.port + i + 1);
  let twins: TwinSpec[];
  let source: string | undefined;
  if (/^\s*\d+\s*$/.test(value)) {
    const n = Number(value);
    if (n < 1 || n > MAX_TWINS)
      throw new ConfigError('--classroom', `the number of twins must be from 1 to ${MAX_TWINS}, not ${n}`);
    const base = robotName(defaults.robot);
    const width = Math.max(2, String(n).length);
    twins = Array.from({ length: n }, (_, i) => ({
      name: `${base}-${String(i + 1).padStart(width, '0')}`,
      robot: defaults.robot,
      port: portOf(i),
    }));
  } else {
    source = value;
    let json: unknown;
    try {
      json = JSON.parse(await readFile(value, 'utf8'));
    } catch (err) {
      throw new ConfigError('--classroom', `cannot read ${value} as JSON: ${(err as Error).message}`);
    }
    const parsed = fileSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ConfigError(issue.path.join('.') || '(file)', issue.message, source);
    }
    twins = parsed.data.twins.map((t, i) => ({
      name: t.name,
      robot: t.robot,
      port: t.port ?? portOf(i),
      token: t.token,
    }));
  }
  const names = new Map<string, number>();
  const ports = new Map<number, number>();
  for (const [i, t] of twins.entries()) {
    const where = `twins.${i}`;
    if (!NAME.test(t.name))
      throw new ConfigError(
        `${where}.name`,
        `"${t.name}" is not a twin name: use letters, digits, - and _ (it goes in URLs and folder names)`,
        source,
      );
    const twice = names.get(t.name);
    if (twice !== undefined)
      throw new ConfigError(`${where}.name`, `duplicate twin name "${t.name}" (also twins.${twice})`, source);
    names.set(t.name, i);
    if (t.port < 0 || t.port > 65535 || (t.port === 0 && defaults.port !== 0))
      throw new ConfigError(
        `${where}.port`,
        `twin ${t.name}: port ${t.port} is out of range 1-65535`,
        source,
      );
    if (t.port !== 0 && t.port === defaults.port)
      throw new ConfigError(
        `${where}.port`,
        `twin ${t.name}: port ${t.port} is the classroom's main --port`,
        source,
      );
    const samePort = ports.get(t.port);
    if (t.port !== 0 && samePort !== undefined)
      throw new ConfigError(
        `${where}.port`,
        `twin ${t.name}: port ${t.port} is also twin ${twins[samePort]!.name}'s`,
        source,
      );
    ports.set(t.port, i);
    const problem = t.token === undefined ? undefined : tokenProblem(t.token);
    if (problem) throw new ConfigError(`${where}.token`, `twin ${t.name}: ${problem}`, source);
  }
  // Each distinct robot once: a bad name or config stops here, before any twin starts.
  const robots = new Map<string, number>();
  for (const [i, t] of twins.entries()) if (!robots.has(t.robot)) robots.set(t.robot, i);
  for (const [robot, i] of robots) {
    try {
      await loadRobotConfig(resolveRobot(robot, source));
    } catch (err) {
      throw new ConfigError(`twins.${i}.robot`, `twin ${twins[i]!.name}: ${(err as Error).message}`, source);
    }
  }
  const tokens = new Map<string, number>();
  for (const [i, t] of twins.entries()) {
    if (t.token === undefined) continue;
    const twice = tokens.get(t.token);
    if (twice !== undefined)
      throw new ConfigError(
        `twins.${i}.token`,
        `twin ${t.name} has twin ${twins[twice]!.name}'s token`,
        source,
      );
    tokens.set(t.token, i);
  }
  // A twin without a token in the roster gets one: each student drives only their own twin.
  return twins.map((t) => ({ ...t, robot: resolveRobot(t.robot, source), token: t.token ?? newToken() }));
}

/** A robot path in a classroom file is relative to the file; a built-in name stays a name. */
function resolveRobot(robot: string, file: string | undefined): string {
  if (!file || !/[/\\]|\.json$/.test(robot) || path.isAbsolute(robot)) return robot;
  return path.join(path.dirname(file), robot);
}

/** `ergo-jr` for `ergo-jr`, `my-bot` for `robots/my-bot.json`. */
function robotName(robot: string): string {
  const base = path.basename(robot).replace(/\.json$/, '');
  return base.replace(/[^A-Za-z0-9_-]/g, '-') || 'twin';
}
