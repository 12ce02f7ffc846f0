/** What calibration the twin runs with (docs/calibration.md): GET /calibration.json. */
import { z } from 'zod';
import { type Calibration, calibrationSchema } from '../../config/calibration.ts';
import { route, type RouteSpec } from '../route.ts';

const answer = z.union([
  z.object({ loaded: z.literal(false) }),
  z.object({
    loaded: z.literal(true),
    file: z.string().meta({ description: 'the calibration file, as resolved at start' }),
    calibration: calibrationSchema,
  }),
]);

/** `loaded` undefined: no calibration; the answer says so (200, `{loaded: false}`), the twin's defaults run. */
export function calibrationRoutes(
  loaded: { file: string; calibration: Calibration } | undefined,
): RouteSpec[] {
  return [
    route({
      method: 'GET',
      path: '/calibration.json',
      summary:
        "the calibration the twin runs with (its file and content), or {loaded: false}: the models' defaults",
      beyondV4: true,
      answer,
      handler: () => (loaded ? { loaded: true as const, ...loaded } : { loaded: false as const }),
    }),
  ];
}
