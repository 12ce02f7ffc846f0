/**
 * GET /robot.json, written straight to JSON text: it is the largest answer polled (3D viewers poll it several times
 * a second) and JSON.stringify of the snapshot objects (keys added one by one) costs more than the rest of the
 * request. Each motor's keys are quoted once; each value goes through JSON.stringify on its own, so the text is
 * exactly what JSON.stringify of the snapshot would give.
 */
import type { Motor } from '../robot/motor.ts';
import { motorSnapshot } from '../robot/motor-registers.ts';
import type { Robot } from '../robot/robot.ts';

/**
 * Counts the changes made through the API: the app bumps it when a request that may change the robot starts and
 * again when it answers, so an answer cached before a change is never served after it.
 */
export class ChangeCounter {
  #count = 0;
  bump(): void {
    this.#count++;
  }
  get count(): number {
    return this.#count;
  }
}

/** What the answer needs of the primitive manager. */
export interface PrimitiveCatalogue<P extends { readonly name: string; readonly running: boolean }> {
  list(): P[];
  propertiesOf(p: P): readonly { readonly name: string }[];
  methodsOf(p: P): readonly { readonly name: string }[];
}

/** Registers that never change while the server runs: written once. */
const CONSTANT = new Set(['registers', 'angle_limit', 'id', 'name', 'model', 'lower_limit', 'upper_limit']);

/** JSON text of a register value, as JSON.stringify writes it (numbers without its generic path). */
function valueText(v: unknown): string | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? `${v}` : 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return JSON.stringify(v);
}

function motorWriter(m: Motor): () => string {
  const first = motorSnapshot(m);
  const fixed = new Map<string, string>();
  for (const key of Object.keys(first))
    if (CONSTANT.has(key)) fixed.set(key, `${JSON.stringify(key)}:${valueText(first[key])}`);
  const quoted = new Map(Object.keys(first).map((k) => [k, `${JSON.stringify(k)}:`]));
  return () => {
    const snapshot = motorSnapshot(m);
    let out = '';
    for (const key in snapshot) {
      let part = fixed.get(key);
      if (part === undefined) {
        const text = valueText(snapshot[key]);
        if (text === undefined) continue;
        part = (quoted.get(key) ?? `${JSON.stringify(key)}:`) + text;
      }
      out += out ? `,${part}` : part;
    }
    return `{${out}}`;
  };
}

/**
 * The writer of `{motors: [...], primitives: [{primitive, running, properties, methods}]}`. A primitive's property
 * and method names are written once per primitive object (they are declared, not changed while it lives); its name
 * and running state are read at every answer. The text is written at most once per control tick and per change
 * made through the API (`changes`): the motors' state and commands change only at a tick or by a request, so
 * polling clients get what they would get from a fresh snapshot, at the loop's 50 Hz resolution.
 */
export function robotJsonWriter<P extends { readonly name: string; readonly running: boolean }>(
  robot: Robot,
  primitives: PrimitiveCatalogue<P>,
  changes?: ChangeCounter,
): () => string {
  const motors = robot.motors.map(motorWriter);
  const declared = new WeakMap<P, string>();
  const tail = (p: P): string => {
    let text = declared.get(p);
    if (text === undefined) {
      text = `,"properties":${JSON.stringify(primitives.propertiesOf(p).map((s) => s.name))},"methods":${JSON.stringify(primitives.methodsOf(p).map((s) => s.name))}}`;
      declared.set(p, text);
    }
    return text;
  };
  let cached = '';
  let cachedTick = -1;
  let cachedChanges = -1;
  return () => {
    if (changes && cachedTick === robot.ticks && cachedChanges === changes.count) return cached;
    cachedTick = robot.ticks;
    cachedChanges = changes?.count ?? -1;
    let out = '{"motors":[';
    for (let i = 0; i < motors.length; i++) out += (i ? ',' : '') + motors[i]!();
    out += '],"primitives":[';
    let first = true;
    for (const p of primitives.list()) {
      out += (first ? '' : ',') + `{"primitive":${JSON.stringify(p.name)},"running":${p.running}` + tail(p);
      first = false;
    }
    cached = out + ']}';
    return cached;
  };
}

/**
 * A writer's text as bytes, encoded again only when the text changes: /robot.json polled many times a tick sends the
 * same bytes, and a Buffer spares Node its UTF-8 encoding and fastify its length count of 8 KB per answer (Torso).
 */
export function cachedBytes(write: () => string): () => Buffer {
  let text: string | undefined;
  let bytes = Buffer.alloc(0);
  return () => {
    const now = write();
    if (now !== text) {
      text = now;
      bytes = Buffer.from(now);
    }
    return bytes;
  };
}
