/**
 * The build's lock (scripts/build.js withLock): two processes that find dist/ stale at once build one after the other
 * (two test files that start the built server used to rebuild it into the same folder together), and a lock left by
 * a build that died is taken over.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { withLock } from '../../scripts/build.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-build-lock-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the build's lock", () => {
  it('runs two holders one after the other, and releases the lock', async () => {
    const lock = path.join(tmp, 'a.lock');
    const events: string[] = [];
    const holder = (name: string) => async () => {
      events.push(`${name} in`);
      await sleep(150);
      events.push(`${name} out`);
    };
    await Promise.all([withLock(holder('first'), lock), withLock(holder('second'), lock)]);
    expect(events).to.deep.equal(['first in', 'first out', 'second in', 'second out']);
    expect(existsSync(lock)).to.equal(false);
  });

  it('releases the lock when the holder throws', async () => {
    const lock = path.join(tmp, 'b.lock');
    let error: unknown;
    await withLock(async () => {
      throw new Error('the build failed');
    }, lock).catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal('the build failed');
    expect(existsSync(lock)).to.equal(false);
  });

  it('takes over a lock older than the limit, and waits for a younger one', async () => {
    const lock = path.join(tmp, 'c.lock');
    mkdirSync(lock);
    const old = new Date(Date.now() - 10_000);
    utimesSync(lock, old, old);
    let ran = false;
    await withLock(async () => void (ran = true), lock, 5_000);
    expect(ran, "a dead build's lock is taken over").to.equal(true);
    mkdirSync(lock);
    let waited = false;
    const held = withLock(async () => void (waited = true), lock, 60_000);
    await sleep(250);
    expect(waited, 'a live lock is waited for').to.equal(false);
    rmSync(lock, { recursive: true });
    await held;
    expect(waited).to.equal(true);
  });
});
