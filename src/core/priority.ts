/** Scheduling priority for the processes that stand for hardware timing (the bus loop, the emulated servos). */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** Sets a process's nice value if this process may; false when it may not (the caller decides whether to say so). */
function trySetPriority(pid: number, nice: number): boolean {
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
function tryRealtime(pid: number, priority: number): boolean {
  try {
    execFileSync('chrt', ['-a', '-f', '-p', String(priority), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** What a process that stands for hardware asks for: real-time FIFO at `realtime` (0: not asked), else `nice`. */
export interface Scheduling {
  readonly realtime: number;
  /** Tried when real time is refused; 0 or more: not asked. */
  readonly nice: number;
}

/** Real time if permitted, else the nice value; false when what was asked was refused (the caller says so). */
export function raiseScheduling(pid: number, s: Scheduling): boolean {
  if (s.realtime > 0 && tryRealtime(pid, s.realtime)) return true;
  return s.nice >= 0 || trySetPriority(pid, s.nice);
}
