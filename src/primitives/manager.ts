/**
 * PLACEHOLDER to be replaced by the primitives work (issue 4): owns the primitives of a robot, their lifecycle and the
 * per-tick combination of their commands. The constructor/open/listing/close signatures are what server.ts uses.
 */
import type { PrimitiveEntry } from '../http/routes/misc.ts';
import type { Logger, Robot } from '../robot/robot.ts';

export interface PrimitiveManagerOptions {
  readonly combine: 'sum' | 'mean';
  readonly logger: Logger;
  /** Folder of custom primitive modules (.ts/.js), or undefined for none. */
  readonly primitivesDir?: string;
  /** Seed for the behaviours' randomness. */
  readonly seed?: number;
}

export class PrimitiveManager {
  readonly robot: Robot;
  readonly options: PrimitiveManagerOptions;
  constructor(robot: Robot, options: PrimitiveManagerOptions) {
    this.robot = robot;
    this.options = options;
  }
  async open(): Promise<void> {}
  listing(): PrimitiveEntry[] {
    return [];
  }
  async close(): Promise<void> {}
}
