/** Moves and motors for the scenario tests, made by code. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { readFile } from 'node:fs/promises';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { modelSpec } from '../../src/dynamixel/registers.ts';
import { type Move, createMove } from '../../src/records/move.ts';
import { Motor } from '../../src/robot/motor.ts';

/** A 50 Hz move: `positions(t)` gives every motor's user degrees at t. */
export function makeMove(seconds: number, positions: (t: number) => Record<string, number>): Move {
  const frames = [];
  for (let i = 0; i * 0.02 <= seconds + 1e-9; i++) {
    const t = Math.round(i * 0.02 * 1e6) / 1e6;
    frames.push({
      t,
      positions: Object.fromEntries(Object.entries(positions(t)).map(([m, p]) => [m, [p, 0]])),
    });
  }
  return createMove(50, frames);
}

/** Smooth 0 -> 1 -> 0 over [0, 1]. */
export const bump = (u: number): number => (1 - Math.cos(2 * Math.PI * Math.min(1, Math.max(0, u)))) / 2;

export async function motorsOf(robot: string): Promise<Motor[]> {
  const config = await loadRobotConfig(robot);
  return config.motors.map((m) => new Motor(m, modelSpec(m.model)));
}

/** The Ergo Jr's start pose (robots/ergo-jr.json startup.pose). */
export const ERGO_REST = { m1: 0, m2: -90, m3: 35, m4: 0, m5: 55, m6: -5 };

/** A gentle 2 s move of the Ergo Jr from its rest pose and back: m1 turns 30 deg, m4 40 deg. */
export function gentleErgoMove(seconds = 2): Move {
  return makeMove(seconds, (t) => ({
    ...ERGO_REST,
    m1: 30 * bump(t / seconds),
    m4: 40 * bump(t / seconds),
  }));
}

/** The 1-based line of `file` holding `snippet` once (lines calling lineOf aside): where a report should point. */
export async function lineOf(file: string, snippet: string): Promise<number> {
  const lines = (await readFile(file, 'utf8')).split('\n');
  const found = lines.flatMap((l, i) => (l.includes(snippet) && !l.includes('lineOf(') ? [i + 1] : []));
  if (found.length !== 1) throw new Error(`"${snippet}" is ${found.length} times in ${file}, not once`);
  return found[0]!;
}

/** Runs the scenario CLI (src/scenario/cli.ts) to its end: exit code and output. */
export async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.resolve(import.meta.dirname, '../../src/scenario/cli.ts'), ...args],
      { cwd: path.resolve(import.meta.dirname, '../..') },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
