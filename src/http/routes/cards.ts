/**
 * Sim-only routes for the marker cards of the twin's world (decided in the helper brief): list them, hold one
 * in front of the robot's camera, put one at a pose, put one away. The detector then finds (or loses) it in the
 * rendered frames exactly as it would on a real camera.
 */
import { z } from 'zod';
import { notFound } from '../../core/errors.ts';
import type { CardState, CardTable } from '../../scene/cards.ts';
import type { SimCamera } from '../../sim/camera.ts';
import { route, type RouteSpec } from '../route.ts';
import { lenientNumber, triple } from '../schema.ts';

export interface CardWorld {
  readonly cards: CardTable;
  /** The twin's camera, when the robot has one (to hold cards in front of it and tell which ones it sees). */
  readonly camera: SimCamera | undefined;
}

const SHOW_TIP = 'send {} or {"distance": 0.2} (metres in front of the camera, 0.02 .. 5)';
const POSE_TIP = 'send {"xyz": [0.1, -0.2, 0.05], "rpy": [1.57, 0, 0]} (root-link frame, metres and radians)';
/** Farther than this from the robot a card is surely a mistake (and the renderer's depth range ends). */
const MAX_CARD_DISTANCE = 100;

const showBody = z.object({
  distance: lenientNumber
    .pipe(
      z
        .number()
        .min(0.02, { error: 'must be between 0.02 and 5 metres' })
        .max(5, { error: 'must be between 0.02 and 5 metres' }),
    )
    .optional()
    .meta({
      description: 'metres in front of the camera, 0.02 .. 5; default: close enough to fill the view',
    }),
});

const poseBody = z.object({
  xyz: triple
    .refine((v) => v.every((c) => Math.abs(c) <= MAX_CARD_DISTANCE), {
      error: `must be within ${MAX_CARD_DISTANCE} metres of the robot`,
    })
    .meta({ description: 'position of the card centre, root-link frame, metres: [x, y, z] or "x,y,z"' }),
  rpy: triple.meta({ description: 'roll, pitch, yaw of the card, radians: [r, p, y] or "r,p,y"' }),
});

const card = z.object({
  name: z.string(),
  id: z.number().int().meta({ description: 'the ArUco marker id printed on the card' }),
  size: z.number().meta({ description: 'side of the printed card, margin included, metres' }),
  visible: z.boolean().meta({ description: "inside the camera's field of view and facing it" }),
  xyz: z.array(z.number()).length(3).meta({ description: 'root-link frame, metres' }),
  rpy: z.array(z.number()).length(3).meta({ description: 'radians' }),
});

const CARD_EXAMPLE = {
  name: 'tetris',
  id: 112259237,
  size: 0.05,
  visible: true,
  xyz: [0.01, 0.02, 0.03],
  rpy: [0, 0, 1],
};

export function cardRoutes(world: CardWorld): RouteSpec[] {
  const entry = (state: CardState): z.output<typeof card> => ({
    name: state.name,
    id: state.id,
    size: state.size,
    visible: world.camera?.sees(state) ?? false,
    xyz: [...state.xyz],
    rpy: [...state.rpy],
  });
  const marks = { simOnly: true, beyondV4: true } as const;
  return [
    route({
      method: 'GET',
      path: '/sim/cards/list.json',
      summary: "sim only: the world's marker cards, their poses and whether the camera sees them",
      ...marks,
      answer: z.object({ cards: z.array(card) }),
      examples: { answer: { cards: [{ ...CARD_EXAMPLE, visible: false, xyz: [-0.08, 0.35, 0.0288] }] } },
      handler: async () => {
        await world.camera?.prepare();
        return { cards: world.cards.list().map(entry) };
      },
    }),
    route({
      method: 'POST',
      path: '/sim/cards/:name/show.json',
      summary:
        'sim only: hold a card in front of the camera, facing it (body {distance} in metres, optional)',
      ...marks,
      body: showBody,
      tip: SHOW_TIP,
      answer: card,
      examples: { body: { distance: 0.2 }, answer: CARD_EXAMPLE },
      handler: async ({ params, body }) => {
        world.cards.get(params.name);
        // Whether the camera sees a card takes its pose, from the renderer's scene (loaded on first use).
        await world.camera?.prepare();
        const camera = world.camera;
        if (!camera)
          throw notFound(
            'this robot has no camera to show a card to',
            POSE_TIP,
            'use pose.json to place the card',
          );
        return entry(camera.show(params.name, body.distance));
      },
    }),
    route({
      method: 'POST',
      path: '/sim/cards/:name/pose.json',
      summary: 'sim only: put a card at a pose {xyz, rpy} in the root-link frame (metres, radians)',
      ...marks,
      body: poseBody,
      tip: POSE_TIP,
      answer: card,
      examples: { body: { xyz: [0.01, 0.02, 0.03], rpy: [0, 0, 1] }, answer: CARD_EXAMPLE },
      handler: async ({ params, body }) => {
        world.cards.get(params.name);
        // Whether the camera sees a card takes its pose, from the renderer's scene (loaded on first use).
        await world.camera?.prepare();
        const [x, y, z] = body.xyz;
        const [r, p, yaw] = body.rpy;
        return entry(world.cards.place(params.name, { xyz: [x!, y!, z!], rpy: [r!, p!, yaw!] }));
      },
    }),
    route({
      method: 'POST',
      path: '/sim/cards/:name/hide.json',
      summary: 'sim only: put a card back in its place, out of view',
      ...marks,
      answer: card,
      examples: { answer: { ...CARD_EXAMPLE, visible: false, xyz: [-0.08, 0.35, 0.0288] } },
      handler: async ({ params }) => {
        world.cards.get(params.name);
        await world.camera?.prepare();
        return entry(world.cards.putAway(params.name));
      },
    }),
  ];
}
