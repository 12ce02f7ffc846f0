/**
 * The room around the twin (robot config `world.room`): walls, floor, ceiling and its lights, in the URDF root
 * link's frame (metres). Every field has a default, so `{}` (or no room at all) gives the default room.
 */
import { z } from 'zod';

const colour = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour #rrggbb');

const lightSchema = z.strictObject({
  /** Position of the lamp, root frame, metres; null puts it on the ceiling above `xyz`'s x and y. */
  xyz: z.tuple([z.number(), z.number(), z.number().nullable()]),
  /** Brightness: 1 lights white paper 1.5 m below the lamp to the room's nominal white. */
  intensity: z.number().min(0).max(100).default(1),
  /** Colour temperature of the lamp, kelvin. */
  kelvin: z.number().min(1000).max(20000).default(4000),
});

export const roomSchema = z.strictObject({
  /** Length (x), width (y) and height (z) of the room, metres. */
  size: z
    .tuple([z.number().min(0.5).max(100), z.number().min(0.5).max(100), z.number().min(0.5).max(20)])
    .default([4, 5, 2.6]),
  /** Where the room's middle is (x, y), root frame: the robot need not stand in the middle. */
  centre: z.tuple([z.number(), z.number()]).default([0.4, 0.6]),
  /** Height of the floor, root frame; default: 0.74 m under a table's top, or the floor the robot stands on. */
  floor: z.number().optional(),
  floorColour: colour.default('#9c7a56'),
  floorPattern: z.enum(['planks', 'tiles', 'plain']).default('planks'),
  wallColour: colour.default('#e6e0d4'),
  ceilingColour: colour.default('#f2f2ef'),
  tableColour: colour.default('#b08358'),
  /** Furniture and pictures along the walls (a door, a window, a shelf, posters). */
  furniture: z.boolean().default(true),
  /** Light that reaches everything (0..1 of the nominal white), besides the lamps. */
  ambient: z.number().min(0).max(1).default(0.3),
  /** Ceiling lamps; default: two panels above the robot's side of the room. */
  lights: z
    .array(lightSchema)
    .min(1)
    .default([
      { xyz: [0, -0.4, null], intensity: 1, kelvin: 4000 },
      { xyz: [0.3, 1.6, null], intensity: 0.8, kelvin: 4000 },
    ]),
});

export type RoomConfig = z.infer<typeof roomSchema>;

/** The default room. */
export const DEFAULT_ROOM: RoomConfig = roomSchema.parse({});
