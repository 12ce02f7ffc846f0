import type { PrimitiveManager } from '../../primitives/manager.ts';
import type { RouteSpec } from '../route.ts';

/** PLACEHOLDER to be replaced by the primitives work (issue 4). */
export function primitiveRoutes(_manager: PrimitiveManager): RouteSpec[] {
  return [];
}
