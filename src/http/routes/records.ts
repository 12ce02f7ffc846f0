import type { RecordsService } from '../../records/service.ts';
import type { RouteSpec } from '../route.ts';

/** PLACEHOLDER to be replaced by the records work (issue 3). */
export function recordRoutes(_records: RecordsService): RouteSpec[] {
  return [];
}
