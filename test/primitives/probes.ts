/** Test primitives that count what happens to them and fail on demand. */
import { Primitive, type PrimitiveContext, type PrimitiveRegister } from '../../src/primitives/primitive.ts';

export type FailIn = 'setup' | 'update' | 'run' | 'teardown';

export interface ProbeOptions {
  readonly frequency?: number;
  readonly oneShot?: number;
  readonly setupSeconds?: number;
  readonly teardownSeconds?: number;
  readonly failIn?: FailIn;
  /** Requests made at setup: motor -> register -> value. */
  readonly requests?: Readonly<Record<string, Partial<Record<PrimitiveRegister, unknown>>>>;
}

/** Counts setups, teardowns and updates; `live` is 1 between a setup's start and the end of its teardown. */
export class Probe extends Primitive {
  setups = 0;
  teardowns = 0;
  updates = 0;
  live = 0;
  maxLive = 0;
  failIn: FailIn | undefined;
  readonly opts: ProbeOptions;

  constructor(ctx: PrimitiveContext, name: string, opts: ProbeOptions = {}) {
    super(ctx, name, { frequency: opts.oneShot === undefined ? (opts.frequency ?? 50) : undefined });
    this.opts = opts;
    this.failIn = opts.failIn;
    if (opts.oneShot !== undefined) {
      this.run = async () => {
        if (this.failIn === 'run') throw new Error('run failed on purpose');
        await this.sleep(opts.oneShot!);
      };
    }
  }

  protected override async setup(): Promise<void> {
    this.setups++;
    this.live++;
    this.maxLive = Math.max(this.maxLive, this.live);
    for (const [motor, regs] of Object.entries(this.opts.requests ?? {}))
      for (const [reg, v] of Object.entries(regs)) this.request(motor, reg as PrimitiveRegister, v);
    if (this.opts.setupSeconds) await this.sleep(this.opts.setupSeconds);
    if (this.failIn === 'setup') throw new Error('setup failed on purpose');
  }

  protected override update(): void {
    this.updates++;
    if (this.failIn === 'update') throw new Error('update failed on purpose');
  }

  protected override async teardown(): Promise<void> {
    this.teardowns++;
    try {
      if (this.opts.teardownSeconds) await this.sleep(this.opts.teardownSeconds);
      if (this.failIn === 'teardown') throw new Error('teardown failed on purpose');
    } finally {
      this.live--;
    }
  }

  /** Public access to the protected tools, for tests. */
  ask(motor: string, register: PrimitiveRegister, value: unknown): void {
    this.request(motor, register, value);
  }

  move(targets: Record<string, number>, duration: number): Promise<void> {
    return this.goto(targets, duration);
  }

  drop(motor?: string, register?: PrimitiveRegister): void {
    this.release(motor, register);
  }
}

/** A logger that keeps what it is told. */
export function recordingLogger() {
  const lines: { level: 'info' | 'warn' | 'error'; msg: string }[] = [];
  return {
    lines,
    info: (msg: string) => void lines.push({ level: 'info', msg }),
    warn: (msg: string) => void lines.push({ level: 'warn', msg }),
    error: (msg: string) => void lines.push({ level: 'error', msg }),
    has: (level: 'info' | 'warn' | 'error', re: RegExp) =>
      lines.some((l) => l.level === level && re.test(l.msg)),
  };
}
