/**
 * A custom primitive: a sine motion on one or more motors.
 *
 *   goal_position = amplitude * sin(phase) + offset,   phase advancing at 2 pi * frequency per second
 *
 * Drop this file into the primitives folder (`--primitives-dir <dir>`, or `primitives/` beside the robot config)
 * and restart the server: it shows up as `sinus` in /primitives/list.json. Over REST:
 *
 *   GET  /primitives/sinus/start.json                          starts it (its motors are made stiff)
 *   POST /primitives/sinus/properties/amplitude/value.json 30  degrees
 *   POST /primitives/sinus/properties/frequency/value.json 0.5 Hz (the phase runs on: no jump)
 *   POST /primitives/sinus/properties/offset/value.json -10    degrees
 *   POST /primitives/sinus/properties/motors/value.json ["head_z"]
 *   GET  /primitives/sinus/properties/phase/value.json         read-only: the phase now, degrees
 *   POST /primitives/sinus/methods/set_phase/args.json {"degrees": 90}   (or [90], or 90)
 *
 * The file needs nothing from the server at run time: the factory receives the context and a library with the
 * Primitive class. The `import type` line below is for type checking in this repository and disappears when the
 * file runs, so the file works from any folder. See docs/primitives.md.
 */
import type {
  MethodSpec,
  PrimitiveContext,
  PrimitiveLibrary,
  PropertySpec,
} from '../../src/primitives/api.ts';

export default function createSinus(ctx: PrimitiveContext, lib: PrimitiveLibrary) {
  const { badRequest } = lib.errors;

  class SinusMotion extends lib.Primitive {
    /** Motors it drives; by default the robot's first motor. */
    motors: string[] = [ctx.robot.motors[0]!.name];
    /** Degrees. */
    amplitude = 20;
    /** Hz of the sine. */
    frequency = 0.5;
    /** Degrees. */
    offset = 0;
    /** Radians; integrated so that a new frequency continues smoothly. */
    #phase = 0;
    #last = 0;

    constructor() {
      // update() runs 50 times per second of robot time, like the control loop.
      super(ctx, 'sinus', { frequency: 50 });
    }

    protected override setup(): void {
      this.#phase = 0;
      this.#last = 0;
      for (const m of this.motors) this.request(m, 'compliant', false);
    }

    protected override update(elapsed: number): void {
      this.#phase += 2 * Math.PI * this.frequency * (elapsed - this.#last);
      this.#last = elapsed;
      const goal = this.amplitude * Math.sin(this.#phase) + this.offset;
      // A request, not a write: the manager adds it to the other running primitives' requests each tick.
      for (const m of this.motors) this.request(m, 'goal_position', goal);
    }

    get phaseDegrees(): number {
      const deg = ((this.#phase * 180) / Math.PI) % 360;
      return Math.round((deg < 0 ? deg + 360 : deg) * 100) / 100;
    }

    override properties(): PropertySpec[] {
      return [
        {
          name: 'amplitude',
          type: 'number',
          get: () => this.amplitude,
          set: (v) => (this.amplitude = v as number),
        },
        {
          name: 'frequency',
          type: 'number',
          get: () => this.frequency,
          set: (v) => {
            if ((v as number) < 0 || (v as number) > 5)
              throw badRequest(
                'frequency must be within 0..5 Hz',
                'send for example 0.5',
                `got ${String(v)}`,
              );
            this.frequency = v as number;
          },
        },
        { name: 'offset', type: 'number', get: () => this.offset, set: (v) => (this.offset = v as number) },
        {
          name: 'motors',
          type: 'string[]',
          get: () => [...this.motors],
          set: (v) => {
            const motors = v as string[];
            if (!motors.length) throw badRequest('motors must not be empty', 'send for example ["m1"]');
            for (const m of motors) ctx.robot.motor(m); // 404 for an unknown motor
            // Motors it no longer drives keep their last goal but leave the combination.
            for (const m of this.motors) if (!motors.includes(m)) this.release(m);
            this.motors = [...new Set(motors)];
            if (this.running) for (const m of this.motors) this.request(m, 'compliant', false);
          },
        },
        { name: 'phase', type: 'number', readOnly: true, get: () => this.phaseDegrees },
      ];
    }

    override methods(): MethodSpec[] {
      return [
        ...super.methods(),
        {
          name: 'set_phase',
          params: [{ name: 'degrees', type: 'number' }],
          call: ([degrees]) => {
            this.#phase = ((degrees as number) * Math.PI) / 180;
            return this.phaseDegrees;
          },
        },
      ];
    }
  }

  return new SinusMotion();
}
