/**
 * The fit of a calibration run's motors in a worker thread (fit-thread.ts starts it): fitMotor takes 60-90 s of CPU
 * per motor, which on the server's thread would stall every request and the shadow twin's cycles. Acts on its thread
 * at load (it reads workerData and posts to its parent): import it only as a worker's entry.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadRobotConfig } from '../config/robot-config.ts';
import { loadUrdf } from '../urdf/parse.ts';
import { fitMotor } from './fit.ts';
import type { FitJob, FitMessage } from './fit-thread.ts';

const job = workerData as FitJob;
const post = (m: FitMessage) => parentPort!.postMessage(m);
try {
  const config = await loadRobotConfig(job.robot);
  const urdf = await loadUrdf(config.urdfPath);
  for (const log of job.logs) {
    const { calibration, evaluations } = await fitMotor(config, urdf, log, job.budget);
    post({ motor: log.motor, calibration, evaluations });
  }
} catch (err) {
  post({ error: (err as Error)?.stack ?? String(err) });
}
