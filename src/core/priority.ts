/** Scheduling priority for the processes that stand for hardware timing (the bus loop, the emulated servos). */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** Sets a process's nice value if this process may; false when it may not (the caller decides whether to say so). */
export function trySetPriority(pid: number, nice: number): boolean {
  try {
    os.setPriority(pid, nice);
    return true;
  } catch {
    return false;
  }
}

/**
 * Puts every thread of a process in the real-time FIFO class at `priority` (chrt, from util-linux) if this process
 * may; false when chrt is missing or refused.
 */
export function tryRealtime(pid: number, priority: number): boolean {
  try {
    execFileSync('chrt', ['-a', '-f', '-p', String(priority), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
