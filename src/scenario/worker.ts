/**
 * A runner process: receives scenario jobs from the runner over IPC, runs each (src/scenario/job.ts) and sends back the
 * result, telling the runner each step it enters (the runner's watchdog names it if the process stops answering).
 * Only the process's entry: a module imported elsewhere must not take its parent's IPC messages for jobs (a mocha
 * worker's own, in a parallel run).
 */
import { type Job, type WorkerMessage, runJob } from './job.ts';

if (process.send) {
  const tell = (m: WorkerMessage) => process.send!(m);
  process.on('message', (job: Job) => {
    void runJob(job, tell).then((result) => tell({ id: job.id, result }));
  });
}
