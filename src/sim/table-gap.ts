/**
 * How far a link's collision shapes are above the table for given joint angles: geometry alone (the URDF's joint
 * origins and shapes, the table's box), no physics. A touch of the table pins the angles that put the link there
 * (src/calibration/touch.ts).
 */
import RAPIER from '@dimforge/rapier3d-simd-compat';
import type { TableConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { initRapier } from './build-world.ts';
import { placeShape, shapeOf } from './collision-shapes.ts';
import { linkPoses } from './link-poses.ts';
import { IDENTITY } from './quat.ts';

/** Distances are looked for this far (m): beyond it a link is "far above", whatever the figure. */
const SEARCH = 0.5;

export interface TableGeometry {
  /**
   * The signed gap (m) between `link`'s shapes and the table's top at `angles` (rad by joint name, absent at 0):
   * negative when they overlap, Infinity for a link without shapes; `lift` (m) raises the table's top (what a touch fits besides the offsets).
   */
  gap(link: string, angles: ReadonlyMap<string, number>, lift?: number): number;
}

/** The robot's links and its table as shapes for gap queries. */
export async function tableGeometry(urdf: UrdfRobot, table: TableConfig): Promise<TableGeometry> {
  await initRapier();
  const shapes = new Map<string, ReturnType<typeof shapeOf>[]>();
  for (const [name, link] of urdf.links) shapes.set(name, link.collisions.map(shapeOf));
  const tableShape = new RAPIER.Cuboid(table.size[0] / 2, table.size[1] / 2, table.size[2] / 2);
  return {
    gap(link, angles, lift = 0) {
      const pose = linkPoses(urdf, angles).get(link);
      const own = shapes.get(link);
      if (!pose) throw new Error(`no link ${link}`);
      if (!own?.length) return Infinity;
      const t = { x: table.xyz[0], y: table.xyz[1], z: table.xyz[2] - table.size[2] / 2 + lift };
      let gap = Infinity;
      for (const s of own) {
        const placed = placeShape(pose, s);
        const hit = placed.shape.contactShape(placed.p, placed.q, tableShape, t, IDENTITY, SEARCH);
        if (hit) gap = Math.min(gap, hit.distance);
      }
      return gap;
    },
  };
}
