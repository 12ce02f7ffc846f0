/**
 * The marker detector's worker thread (see WorkerDetector): receives frames, answers the markers found in them.
 * Detecting a 640x480 frame takes about 11 ms of CPU; here it never holds up the thread that serves REST and steps
 * the physics.
 */
import { parentPort } from 'node:worker_threads';
import { MarkerDetector } from './detect.ts';
import type { DetectRequest, DetectResponse } from './worker-detector.ts';

const detector = new MarkerDetector();
const port = parentPort!;
port.on('message', (req: DetectRequest) => {
  let res: DetectResponse;
  try {
    res = { id: req.id, markers: detector.detect(req.frame) };
  } catch (err) {
    res = { id: req.id, error: (err as Error)?.message ?? String(err) };
  }
  port.postMessage(res);
});
