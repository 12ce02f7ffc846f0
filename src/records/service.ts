/**
 * PLACEHOLDER to be replaced by the records work (issue 3): record, save, play, stop, delete moves.
 */
import type { PrimitiveManager } from '../primitives/manager.ts';
import type { Logger, Robot } from '../robot/robot.ts';
import type { RecordStore } from './store.ts';

export interface RecordsServiceOptions {
  readonly robot: Robot;
  readonly manager: PrimitiveManager;
  readonly store: RecordStore;
  readonly logger: Logger;
}

export class RecordsService {
  readonly options: RecordsServiceOptions;
  constructor(options: RecordsServiceOptions) {
    this.options = options;
  }
  async open(): Promise<void> {}
  async close(): Promise<void> {}
}
