/** The Pi-budget bench's fallback throttle (bench/duty-cycle.ts), on scripted sleeps and a /proc of files. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { DutyCycleThrottle, dutyCycle, processTree } from '../../bench/duty-cycle.ts';

describe('the duty-cycle throttle (taskset + SIGSTOP/SIGCONT)', () => {
  it('runs share of the period and stops the rest', () => {
    expect(dutyCycle(0.2, 20)).to.deep.equal({ runMs: 4, stopMs: 16 });
    expect(dutyCycle(1, 20)).to.deep.equal({ runMs: 20, stopMs: 0 });
    expect(() => dutyCycle(0, 20)).to.throw(/\(0, 1\]/);
  });

  it('stops every process after its run, continues them after the stop, and leaves them continued', async () => {
    const calls: string[] = [];
    let sleeps = 0;
    let stopping: Promise<void> | undefined;
    let t = 0;
    const throttle: DutyCycleThrottle = new DutyCycleThrottle({
      now: () => t,
      share: 0.25,
      periodMs: 20,
      pids: () => [11, 12],
      signal: (pid, sig) => calls.push(`${sig} ${pid}`),
      sleep: async (ms) => {
        calls.push(`sleep ${ms}`);
        // The first run phase's timer fires 1 ms late: the stop that follows is 1 ms shorter.
        t += ms + (sleeps === 0 ? 1 : 0);
        // Stopped during the second period's stop: it ends that stop first.
        if (++sleeps === 4) stopping = throttle.stop();
      },
    });
    await new Promise((r) => setTimeout(r, 10));
    await stopping;
    const period = (stop: number) => [
      'sleep 5',
      'SIGSTOP 11',
      'SIGSTOP 12',
      `sleep ${stop}`,
      'SIGCONT 11',
      'SIGCONT 12',
    ];
    expect(calls).to.deep.equal([...period(14), ...period(15), 'SIGCONT 11', 'SIGCONT 12']);
    expect(throttle.stopped).to.equal(2);
  });

  it('finds a process and its descendants in /proc', () => {
    const proc = mkdtempSync(path.join(os.tmpdir(), 'proc-'));
    try {
      const task = (pid: number, children: string) => {
        mkdirSync(path.join(proc, String(pid), 'task', String(pid)), { recursive: true });
        writeFileSync(path.join(proc, String(pid), 'task', String(pid), 'children'), children);
      };
      task(1, '2 3 ');
      task(2, '4 ');
      task(3, '');
      task(4, '');
      expect(processTree(1, proc)).to.deep.equal([1, 2, 3, 4]);
      // A process gone meanwhile has no folder: it is still listed, its children are not looked for.
      expect(processTree(9, proc)).to.deep.equal([9]);
    } finally {
      rmSync(proc, { recursive: true, force: true });
    }
  });
});
