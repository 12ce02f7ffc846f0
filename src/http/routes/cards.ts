/**
 * Sim-only routes for the marker cards of the twin's world (decided in the helper brief): list them, hold one
 * in front of the robot's camera, put one at a pose, put one away. The detector then finds (or loses) it in the
 * rendered frames exactly as it would on a real camera.
 */
import { badRequest, notFound } from '../../core/errors.ts';
import { parseNumber, parseNumberArray } from '../../core/values.ts';
import type { CardState, CardTable } from '../../scene/cards.ts';
import type { SimCamera } from '../../sim/camera.ts';
import { objectBody } from '../body.ts';
import type { RouteSpec } from '../route.ts';

export interface CardWorld {
  readonly cards: CardTable;
  /** The twin's camera, when the robot has one (to hold cards in front of it and tell which ones it sees). */
  readonly camera: SimCamera | undefined;
}

const SHOW_TIP = 'send {} or {"distance": 0.2} (metres in front of the camera, 0.02 .. 5)';
const POSE_TIP = 'send {"xyz": [0.1, -0.2, 0.05], "rpy": [1.57, 0, 0]} (root-link frame, metres and radians)';

export function cardRoutes(world: CardWorld): RouteSpec[] {
  const entry = (card: CardState) => ({
    name: card.name,
    id: card.id,
    size: card.size,
    visible: world.camera?.sees(card) ?? false,
    xyz: [...card.xyz],
    rpy: [...card.rpy],
  });
  return [
    {
      method: 'GET',
      path: '/sim/cards/list.json',
      summary: "sim only: the world's marker cards, their poses and whether the camera sees them",
      handler: () => ({ cards: world.cards.list().map(entry) }),
    },
    {
      method: 'POST',
      path: '/sim/cards/:name/show.json',
      summary:
        'sim only: hold a card in front of the camera, facing it (body {distance} in metres, optional)',
      handler: ({ params, body }) => {
        world.cards.get(params.name!);
        const camera = world.camera;
        if (!camera)
          throw notFound(
            'this robot has no camera to show a card to',
            POSE_TIP,
            'use pose.json to place the card',
          );
        const b = objectBody(body, SHOW_TIP);
        const distance = b.distance === undefined ? undefined : parseNumber(b.distance, 'distance');
        if (distance !== undefined && !(distance >= 0.02 && distance <= 5))
          throw badRequest('distance must be between 0.02 and 5 metres', SHOW_TIP, `got ${distance}`);
        return entry(camera.show(params.name!, distance));
      },
    },
    {
      method: 'POST',
      path: '/sim/cards/:name/pose.json',
      summary: 'sim only: put a card at a pose {xyz, rpy} in the root-link frame (metres, radians)',
      handler: ({ params, body }) => {
        world.cards.get(params.name!);
        const b = objectBody(body, POSE_TIP);
        if (b.xyz === undefined || b.rpy === undefined)
          throw badRequest(
            'xyz and rpy are both required',
            POSE_TIP,
            `got fields ${Object.keys(b).join(', ') || 'none'}`,
          );
        const xyz = parseNumberArray(b.xyz, 3, 'xyz') as [number, number, number];
        const rpy = parseNumberArray(b.rpy, 3, 'rpy') as [number, number, number];
        if (xyz.some((v) => Math.abs(v) > 100))
          throw badRequest('xyz must be within 100 metres of the robot', POSE_TIP, `got [${xyz.join(', ')}]`);
        return entry(world.cards.place(params.name!, { xyz, rpy }));
      },
    },
    {
      method: 'POST',
      path: '/sim/cards/:name/hide.json',
      summary: 'sim only: put a card back in its place, out of view',
      handler: ({ params }) => entry(world.cards.putAway(params.name!)),
    },
  ];
}
