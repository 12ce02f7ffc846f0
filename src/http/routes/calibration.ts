/**
 * Calibration (docs/calibration.md): GET /calibration.json, what the twin runs with; and the identification run of a
 * `--backend=real --shadow` server, started, watched and stopped here (src/calibration/server-run.ts behind the
 * CalibrationRunner seam: this room does not import that one).
 */
import { z } from 'zod';
import { type Calibration, SIM_RUN_REFUSAL, calibrationSchema } from '../../config/calibration.ts';
import { conflict } from '../../core/errors.ts';
import { route, type RouteSpec } from '../route.ts';

const answer = z.union([
  z.object({ loaded: z.literal(false) }),
  z.object({
    loaded: z.literal(true),
    file: z.string().meta({ description: 'the calibration file, as resolved at start' }),
    calibration: calibrationSchema,
  }),
]);

const runStatus = z.object({
  state: z.enum(['idle', 'running', 'fitting', 'done', 'stopped', 'failed']).meta({
    description:
      'running: the robot is held and its servos driven; fitting: the robot is free again, the fit goes on; ' +
      'done: the file is written; stopped, failed: nothing was written',
  }),
  motors: z.array(z.string()).meta({ description: 'the motors of the last run, in order' }),
  motor: z.string().nullable().meta({ description: 'the motor being run or fitted now' }),
  progress: z.array(z.string()).meta({ description: 'the lines `npm run calibrate` prints, oldest first' }),
  file: z.string().nullable().meta({
    description:
      'where the calibration is written at the end: <records dir>/calibrations/<robot>-<UTC time>.json',
  }),
  error: z.string().nullable(),
  load: z.string().nullable().meta({ description: 'once done: how to load the file' }),
  started: z.string().nullable().meta({ description: 'ISO 8601' }),
  ended: z.string().nullable().meta({ description: 'ISO 8601' }),
});
type RunStatus = z.infer<typeof runStatus>;

const runBody = z.object({
  motors: z
    .array(z.string({ error: 'must be a motor name' }), { error: 'must be an array of motor names' })
    .min(1, { error: 'must not be empty' })
    .optional()
    .meta({ description: 'the motors to run, in order (default: every motor)' }),
  touch: z
    .boolean({ error: 'must be true or false' })
    .optional()
    .meta({ description: "after the motors, the table's touches that place the offsets (default true)" }),
});

/** The run as the routes see it (src/calibration/server-run.ts CalibrationRun). */
export interface CalibrationRunner {
  start(motors?: readonly string[], touch?: boolean): Promise<RunStatus>;
  stop(): Promise<RunStatus>;
  status(): RunStatus;
}

const TIP_SIM =
  'start the server with --backend=real --shadow --serial=<device>: the robot, or the bus emulator ' +
  `(${SIM_RUN_REFUSAL.emulator})`;
const TIP_OFF =
  'start the server with --backend=real --shadow (or "shadow": true in the robot config): the twin watches the run ' +
  '(and --guard predicts each joint before it runs); without a server, npm run calibrate does the same run';

/**
 * `loaded` undefined: no calibration; the answer says so (200, `{loaded: false}`), the twin's defaults run.
 * `run`: the calibration run, or why there is none (409 with a tip): the sim backend, or shadow mode off.
 */
export function calibrationRoutes(
  loaded: { file: string; calibration: Calibration } | undefined,
  run: CalibrationRunner | 'sim' | 'no-shadow',
): RouteSpec[] {
  const need = (): CalibrationRunner => {
    if (typeof run === 'object') return run;
    if (run === 'sim') throw conflict(SIM_RUN_REFUSAL.error, TIP_SIM, '--backend=sim');
    throw conflict('a calibration run needs shadow mode', TIP_OFF, '--backend=real without --shadow');
  };
  return [
    route({
      method: 'GET',
      path: '/calibration.json',
      summary:
        "the calibration the twin runs with (its file and content), or {loaded: false}: the models' defaults",
      beyondV4: true,
      answer,
      handler: () => (loaded ? { loaded: true as const, ...loaded } : { loaded: false as const }),
    }),
    route({
      method: 'POST',
      path: '/calibration/run.json',
      summary:
        'starts a calibration run in the background (real backend with --shadow): 202 with its status; ' +
        'every move is refused (409) while it holds the robot',
      description:
        'Runs each motor through its excitation (38 s of robot time each), then (unless touch is false) presses ' +
        'the arm gently onto the table from a few poses to place the offsets, then fits in a worker thread and ' +
        'writes the file at the very end (docs/calibration.md). 400 for a motor the robot lacks; 409 while a run is ' +
        'on, while a goto, primitive or replay moves the robot, on --backend=sim, without --shadow, or when the ' +
        "guard predicts a contact for the first joint's start.",
      beyondV4: true,
      status: 202,
      body: runBody,
      tip: 'send {"motors": ["m2", "m3"]}, or {} for every motor',
      answer: runStatus,
      examples: { body: { motors: ['m2'] } },
      handler: ({ body }) => need().start(body.motors, body.touch),
    }),
    route({
      method: 'GET',
      path: '/calibration/run.json',
      summary: "the calibration run's status: state, motor, progress lines, the file, the error",
      beyondV4: true,
      answer: runStatus,
      handler: () => need().status(),
    }),
    route({
      method: 'POST',
      path: '/calibration/run/stop.json',
      summary:
        'stops the calibration run at once (servos left as --on-close says, nothing written); answers the status',
      beyondV4: true,
      answer: runStatus,
      handler: () => need().stop(),
    }),
  ];
}
