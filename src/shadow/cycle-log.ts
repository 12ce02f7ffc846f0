/**
 * Shadow mode's cycle log (`--shadow-log=<file>`, docs/shadow.md): JSON lines, a header naming the robot, then one
 * line per cycle the twin ran: per motor the command in force after the cycle's writes (goal, torque on, torque
 * limit) and the position the servo read, raw degrees. What `npm run calibrate -- --from-log` fits from.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { type ModelSpec, type RawValue, positionToDeg } from '../dynamixel/registers.ts';

export interface CycleLogHeader {
  readonly shadowLog: 1;
  readonly robot: string;
}

/** One motor at one cycle: raw degrees; position null when the servo gave no reading. */
export interface CycleLogMotor {
  readonly position: number | null;
  readonly goal: number;
  readonly torque: boolean;
  readonly limit: number;
}

export interface CycleLogLine {
  /** Seconds on the backend's clock. */
  readonly t: number;
  readonly motors: Readonly<Record<string, CycleLogMotor>>;
}

export class CycleLog {
  readonly #out: WriteStream;

  constructor(file: string, robot: string) {
    this.#out = createWriteStream(file, { flags: 'w' });
    this.#write({ shadowLog: 1, robot } satisfies CycleLogHeader);
  }

  /** The cycle at `t`: the commands the twin's servos hold after it (raw), and `realPos` what the real ones read. */
  record(
    t: number,
    motors: readonly { readonly id: number; readonly name: string; readonly spec: ModelSpec }[],
    realPos: ReadonlyMap<number, RawValue> | undefined,
    commands: {
      readonly goal: ReadonlyMap<number, RawValue>;
      readonly torque: ReadonlyMap<number, RawValue>;
      readonly limit: ReadonlyMap<number, RawValue>;
    },
  ): void {
    const line: Record<string, CycleLogMotor> = {};
    for (const m of motors) {
      const p = realPos?.get(m.id);
      line[m.name] = {
        position: typeof p === 'number' ? positionToDeg(m.spec, p) : null,
        goal: positionToDeg(m.spec, commands.goal.get(m.id) as number),
        torque: commands.torque.get(m.id) === 1,
        limit: commands.limit.get(m.id) as number,
      };
    }
    this.#write({ t: Number(t.toFixed(4)), motors: line } satisfies CycleLogLine);
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) =>
      this.#out.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  }

  #write(value: object): void {
    this.#out.write(JSON.stringify(value) + '\n');
  }
}
