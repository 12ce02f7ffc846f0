/**
 * Whether a server is ready to answer: the parts it waits for (the robot started, the custom primitives loaded), so
 * that a client never sees a robot without the primitives it has. Until then /readyz and every route but /healthz
 * answer 503 with a tip (the gate in app.ts); an orchestrator probes /healthz (alive) and /readyz (ready).
 */
export class Readiness {
  /** The parts still awaited, by name, in the order they were added. */
  readonly #waiting = new Set<string>();
  readonly #waiters: (() => void)[] = [];
  #ready = true;

  /** The server is not ready until `until` settles (resolved or rejected: a failed part is reported elsewhere). */
  wait(part: string, until: Promise<unknown>): void {
    this.#waiting.add(part);
    this.#ready = false;
    const done = () => {
      this.#waiting.delete(part);
      if (this.#waiting.size) return;
      this.#ready = true;
      for (const resolve of this.#waiters.splice(0)) resolve();
    };
    until.then(done, done);
  }

  /** A plain field read: the gate checks it on every request. */
  get ready(): boolean {
    return this.#ready;
  }

  /** What is still awaited, e.g. ["custom primitives"]. */
  get waitingFor(): readonly string[] {
    return [...this.#waiting];
  }

  /** Resolves once every part awaited so far has settled. */
  whenReady(): Promise<void> {
    return this.#ready ? Promise.resolve() : new Promise((resolve) => this.#waiters.push(resolve));
  }
}
