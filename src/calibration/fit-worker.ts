/**
 * A calibration's CPU work in a worker thread (fit-thread.ts starts it): the joints' clear swings before a run, or
 * the two-pass fit after it (60-90 s of CPU per motor and pass), which on the server's thread would stall every
 * request and the shadow twin's cycles. Acts on its thread at load (it reads workerData and posts to its parent):
 * import it only as a worker's entry.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadRobotConfig } from '../config/robot-config.ts';
import { loadUrdf } from '../urdf/parse.ts';
import { clearExcitation } from './clearance.ts';
import { defaultCalibration } from './defaults.ts';
import { fitRobot } from './fit-robot.ts';
import type { FitJob, FitMessage } from './fit-thread.ts';
import { fitTouches, touchFitLine } from './touch-fit.ts';
import { planTouch, touchSpecs } from './touch.ts';

const job = workerData as FitJob;
const post = (m: FitMessage) => parentPort!.postMessage(m);
try {
  const config = await loadRobotConfig(job.robot);
  const urdf = await loadUrdf(config.urdfPath);
  if (job.planTouches) {
    for (const spec of touchSpecs(config)) post({ touch: await planTouch(config, urdf, spec) });
  } else if (job.plan) {
    for (const motor of job.plan) {
      const plan = await clearExcitation(config, urdf, motor);
      post(
        plan.excitation
          ? {
              motor,
              swing: true,
              amplitudeDeg: plan.amplitudeDeg,
              chirpAmplitudeDeg: plan.chirpAmplitudeDeg,
              refused: plan.refused,
              unsteady: plan.unsteady,
            }
          : { motor, swing: true, amplitudeDeg: null, refused: plan.refused },
      );
    }
  } else {
    const touched = job.touches?.length ? await fitTouches(config, urdf, job.touches) : undefined;
    if (touched) post({ line: touchFitLine(touched) });
    await fitRobot(config, urdf, job.logs, defaultCalibration(config), {
      touched: touched?.offsets,
      budget: job.budget,
      onFitted: (motor, { calibration, evaluations }) => post({ motor, calibration, evaluations }),
    });
  }
  post({ done: true });
} catch (err) {
  post({ error: (err as Error)?.stack ?? String(err) });
}
