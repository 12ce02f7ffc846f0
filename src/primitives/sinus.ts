/**
 * pypot's Sinus: goal = amplitude * sin(2 pi frequency t + phase) + offset on some motors, t = seconds since it
 * started (pauses excluded). The built-in idle motions and dances are sums of these (the manager adds them up).
 */
import { badRequest } from '../core/errors.ts';
import { Primitive, type PrimitiveContext, type PropertySpec } from './primitive.ts';

export interface SinusOptions {
  readonly motors: readonly string[];
  /** Degrees. */
  readonly amp: number;
  /** Hz of the sine. */
  readonly freq: number;
  /** Degrees. */
  readonly offset?: number;
  /** Degrees. */
  readonly phase?: number;
  /** Hz of the updates (default 50, the control loop's rate). */
  readonly rate?: number;
}

export class Sinus extends Primitive {
  readonly motors: readonly string[];
  amp: number;
  freq: number;
  offset: number;
  phase: number;

  constructor(ctx: PrimitiveContext, name: string, opts: SinusOptions) {
    super(ctx, name, { frequency: opts.rate ?? 50 });
    for (const m of opts.motors) ctx.robot.motor(m);
    this.motors = [...opts.motors];
    this.amp = opts.amp;
    this.freq = opts.freq;
    this.offset = opts.offset ?? 0;
    this.phase = opts.phase ?? 0;
  }

  /** The goal this sinus requests at time t (s). */
  valueAt(t: number): number {
    return this.amp * Math.sin(2 * Math.PI * this.freq * t + (this.phase * Math.PI) / 180) + this.offset;
  }

  protected override update(elapsed: number): void {
    const v = this.valueAt(elapsed);
    for (const m of this.motors) this.request(m, 'goal_position', v);
  }

  override properties(): PropertySpec[] {
    const num = (name: string, get: () => number, set: (v: number) => void): PropertySpec => ({
      name,
      type: 'number',
      get,
      set: (v) => set(v as number),
    });
    return [
      num(
        'amplitude',
        () => this.amp,
        (v) => (this.amp = v),
      ),
      num(
        'frequency',
        () => this.freq,
        (v) => {
          if (v < 0) throw badRequest('frequency must be >= 0', 'send a frequency in Hz', `got ${v}`);
          this.freq = v;
        },
      ),
      num(
        'offset',
        () => this.offset,
        (v) => (this.offset = v),
      ),
      num(
        'phase',
        () => this.phase,
        (v) => (this.phase = v),
      ),
    ];
  }
}
