/**
 * The room around the robot as three.js objects: floor, four walls, ceiling with lamp panels, furniture and
 * pictures along the walls, the lamps (point lights) and the ambient light. Surfaces face into the room only, so a
 * view from outside looks through them. Big surfaces are subdivided so the lamps' light varies over them.
 * Browser-safe.
 */
import * as THREE from 'three';
import type { RoomConfig } from '../config/room.ts';
import type { TableConfig } from '../config/robot-config.ts';
import { mulberry32 } from '../core/prng.ts';
import { kelvinLinear } from './colour.ts';
import {
  ceilingTexture,
  hexRgb,
  planksTexture,
  posterTexture,
  tilesTexture,
  whiteboardTexture,
  windowTexture,
  woodTexture,
} from './textures.ts';

/** Height of a table top above the floor when the config does not say where the floor is, metres. */
export const TABLE_HEIGHT = 0.74;
/** How bright a lamp panel looks (it is a light source: brighter than any lit paper). */
const PANEL_GLOW = 4;

/** z of the room's floor in the root frame. */
export function floorHeight(room: RoomConfig, table: TableConfig | null): number {
  if (room.floor !== undefined) return room.floor;
  if (!table) return -0.05;
  return table.kind === 'floor' ? table.xyz[2] - 0.001 : table.xyz[2] - TABLE_HEIGHT;
}

function lambert(colour: THREE.ColorRepresentation, map?: THREE.Texture): THREE.MeshLambertMaterial {
  return new THREE.MeshLambertMaterial(map ? { map } : { color: colour });
}

/** A plane of w x h with `segments` per metre, texture repeated every `tile` metres (0: stretched once). */
function plane(w: number, h: number, material: THREE.Material, tile = 0, perMetre = 3): THREE.Mesh {
  const geometry = new THREE.PlaneGeometry(
    w,
    h,
    Math.max(1, Math.ceil(w * perMetre)),
    Math.max(1, Math.ceil(h * perMetre)),
  );
  if (tile > 0) {
    const uv = geometry.getAttribute('uv') as THREE.BufferAttribute;
    for (let i = 0; i < uv.count; i++) uv.setXY(i, (uv.getX(i) * w) / tile, (uv.getY(i) * h) / tile);
  }
  return new THREE.Mesh(geometry, material);
}

function box(
  size: [number, number, number],
  material: THREE.Material,
  at: [number, number, number],
): THREE.Mesh {
  const mesh = new THREE.Mesh(new THREE.BoxGeometry(...size), material);
  mesh.position.set(...at);
  return mesh;
}

/**
 * A wall's frame: origin at the wall's bottom middle, x along the wall, y up, z into the room. Things hung on it
 * are children placed in those coordinates.
 */
function wallFrame(centre: THREE.Vector3, inward: THREE.Vector3): THREE.Group {
  const up = new THREE.Vector3(0, 0, 1);
  const along = new THREE.Vector3().crossVectors(up, inward);
  const group = new THREE.Group();
  group.quaternion.setFromRotationMatrix(new THREE.Matrix4().makeBasis(along, up, inward));
  group.position.copy(centre);
  return group;
}

export function roomObject(room: RoomConfig, table: TableConfig | null): THREE.Group {
  const group = new THREE.Group();
  group.name = 'room';
  const [sx, sy, sz] = room.size;
  const [cx, cy] = room.centre;
  const floor = floorHeight(room, table);
  const top = floor + sz;
  const rand = mulberry32(2024);

  const floorRgb = hexRgb(room.floorColour);
  const floorMap =
    room.floorPattern === 'planks'
      ? planksTexture(floorRgb)
      : room.floorPattern === 'tiles'
        ? tilesTexture(floorRgb)
        : undefined;
  const floorMesh = plane(sx, sy, lambert(room.floorColour, floorMap), floorMap ? 1 : 0);
  floorMesh.name = 'room-floor';
  floorMesh.position.set(cx, cy, floor);
  group.add(floorMesh);

  const ceiling = plane(sx, sy, lambert(room.ceilingColour, ceilingTexture(hexRgb(room.ceilingColour))), 0.6);
  ceiling.name = 'room-ceiling';
  ceiling.rotation.x = Math.PI;
  ceiling.position.set(cx, cy, top);
  group.add(ceiling);

  const wallMaterial = lambert(room.wallColour);
  const skirting = lambert(0xd8d4cc);
  const walls: { centre: THREE.Vector3; inward: THREE.Vector3; length: number }[] = [
    { centre: new THREE.Vector3(cx, cy - sy / 2, floor), inward: new THREE.Vector3(0, 1, 0), length: sx },
    { centre: new THREE.Vector3(cx, cy + sy / 2, floor), inward: new THREE.Vector3(0, -1, 0), length: sx },
    { centre: new THREE.Vector3(cx - sx / 2, cy, floor), inward: new THREE.Vector3(1, 0, 0), length: sy },
    { centre: new THREE.Vector3(cx + sx / 2, cy, floor), inward: new THREE.Vector3(-1, 0, 0), length: sy },
  ];
  const frames = walls.map(({ centre, inward, length }, i) => {
    const frame = wallFrame(centre, inward);
    frame.name = `room-wall-${i}`;
    const wall = plane(length, sz, wallMaterial);
    wall.position.set(0, sz / 2, 0);
    frame.add(wall);
    frame.add(box([length, 0.08, 0.015], skirting, [0, 0.04, 0.0075]));
    group.add(frame);
    return frame;
  });

  if (room.furniture) {
    const [front, back, left, right] = frames as [THREE.Group, THREE.Group, THREE.Group, THREE.Group];
    const white = lambert(0xf4f4f4);
    // A window (the view outside glows: daylight) in a white frame, and a whiteboard beside it.
    const glass = new THREE.Mesh(
      new THREE.PlaneGeometry(1.2, 1.0),
      new THREE.MeshBasicMaterial({ map: windowTexture() }),
    );
    glass.userData.glow = 2.5;
    glass.position.set(-0.7, 1.5, 0.004);
    front.add(glass);
    for (const [w, h, x, y] of [
      [1.3, 0.06, -0.7, 2.0],
      [1.3, 0.06, -0.7, 1.0],
      [0.06, 1.0, -1.32, 1.5],
      [0.06, 1.0, -0.08, 1.5],
      [0.04, 1.0, -0.7, 1.5],
    ] as const)
      front.add(box([w, h, 0.05], white, [x, y, 0.025]));
    const board = plane(1.1, 0.8, lambert(0xffffff, whiteboardTexture()), 0, 1);
    board.position.set(0.8, 1.35, 0.021);
    front.add(board, box([1.16, 0.86, 0.02], lambert(0x9aa0a6), [0.8, 1.35, 0.005]));
    front.add(box([1.4, 0.7, 0.02], lambert(0xd9d2c5), [0.9, 0.35, 0.01])); // a low cupboard's doors
    front.add(box([1.44, 0.04, 0.45], lambert(0x8a6a4a), [0.9, 0.72, 0.225]));

    // A door with its frame and handle.
    back.add(box([0.9, 2.0, 0.04], lambert(0x9b6b43), [0.6, 1.0, 0.02]));
    back.add(box([1.0, 2.06, 0.02], white, [0.6, 1.03, 0.008]));
    back.add(box([0.12, 0.03, 0.06], lambert(0xc0c0c0), [0.95, 1.0, 0.06]));
    const poster = plane(0.6, 0.8, lambert(0xffffff, posterTexture(31)), 0, 1);
    poster.position.set(-0.8, 1.5, 0.006);
    back.add(poster);

    // A book shelf.
    const shelfWood = lambert(0x7a5638);
    for (const y of [0.9, 1.3, 1.7]) left.add(box([1.2, 0.025, 0.25], shelfWood, [0.3, y, 0.125]));
    for (const y of [0.9, 1.3]) {
      let x = -0.28;
      while (x < 0.85) {
        const w = 0.025 + rand() * 0.04;
        const h = 0.2 + rand() * 0.14;
        const colour = new THREE.Color().setHSL(rand(), 0.35 + rand() * 0.4, 0.25 + rand() * 0.4);
        left.add(box([w, h, 0.18], lambert(colour), [x + w / 2, y + 0.0125 + h / 2, 0.1]));
        x += w + 0.004;
      }
    }
    const poster2 = plane(0.5, 0.7, lambert(0xffffff, posterTexture(32)), 0, 1);
    poster2.position.set(-1.1, 1.45, 0.006);
    left.add(poster2);

    // Pictures and a radiator.
    for (const [x, seed] of [
      [-0.9, 33],
      [0.4, 34],
    ] as const) {
      const p = plane(0.45, 0.6, lambert(0xffffff, posterTexture(seed)), 0, 1);
      p.position.set(x, 1.5, 0.006);
      right.add(p);
    }
    for (let k = 0; k < 12; k++) right.add(box([0.05, 0.55, 0.06], white, [-0.3 + k * 0.07, 0.45, 0.06]));
  }

  if (table && table.kind === 'table') {
    // Legs under the table top (the top itself is the twin's table, drawn by the scene).
    const legs = lambert(0x6b6f75);
    const [tx, ty, tz] = table.xyz;
    const [lx, ly, lz] = table.size;
    const h = tz - lz - floor;
    if (h > 0.01)
      for (const [ex, ey] of [
        [-1, -1],
        [1, -1],
        [1, 1],
        [-1, 1],
      ] as const)
        group.add(
          box([0.04, 0.04, h], legs, [tx + ex * (lx / 2 - 0.05), ty + ey * (ly / 2 - 0.05), floor + h / 2]),
        );
  }

  // Lamps: a glowing panel on the ceiling and a point light just under it; plus the ambient light.
  for (const lamp of room.lights) {
    const [x, y] = lamp.xyz;
    const z = lamp.xyz[2] ?? top - 0.02;
    const [r, g, b] = kelvinLinear(lamp.kelvin);
    const panel = new THREE.Mesh(
      new THREE.PlaneGeometry(0.6, 0.6),
      new THREE.MeshBasicMaterial({ color: new THREE.Color(r, g, b) }),
    );
    panel.userData.glow = PANEL_GLOW * lamp.intensity;
    panel.rotation.x = Math.PI;
    panel.position.set(x, y, Math.min(z + 0.01, top - 0.005));
    group.add(panel);
    const light = new THREE.PointLight(new THREE.Color(r, g, b), lamp.intensity, 0, 2);
    light.position.set(x, y, z);
    group.add(light);
  }
  group.add(new THREE.AmbientLight(0xffffff, room.ambient));
  return group;
}

/** The table top's material in a room: wood grain. */
export function tableMaterial(room: RoomConfig): THREE.MeshLambertMaterial {
  return lambert(room.tableColour, woodTexture(hexRgb(room.tableColour)));
}
