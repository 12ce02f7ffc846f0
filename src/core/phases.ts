/**
 * How long each part of the start took, for the start-up line ("config 4 ms, urdf 31 ms, ..."): where a slow start
 * goes is visible on every start, not only under a profiler.
 */
export class Phases {
  readonly #list: [string, number][] = [];
  #last: number;

  constructor(start = performance.now()) {
    this.#last = start;
  }

  /** Ends the part running since the previous mark (or the start) under `name`. */
  mark(name: string): void {
    const now = performance.now();
    this.#list.push([name, now - this.#last]);
    this.#last = now;
  }

  get list(): readonly (readonly [string, number])[] {
    return this.#list;
  }

  toString(): string {
    return this.#list.map(([name, ms]) => `${name} ${Math.round(ms)} ms`).join(', ');
  }
}
