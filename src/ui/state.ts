/**
 * What the live view shows of the robot: a description sent once (motors, limits, world) and a state sent at the
 * viewer's rate (positions, compliance, running primitives, records, detected markers). Plain JSON, built from the
 * robot's own objects; angle conversions come from src/core/frames.ts, never repeated here.
 */
import { userToJoint } from '../core/frames.ts';
import type { PrimitiveManager } from '../primitives/manager.ts';
import type { Robot } from '../robot/robot.ts';
import type { UrdfLink, UrdfRobot } from '../urdf/types.ts';
import {
  MAX_RATE,
  type RobotDescription,
  type RobotState,
  type SceneDescription,
  type SceneLink,
  type StreamMarker,
  type StreamShadow,
} from './protocol.ts';

export type { StreamMarker, StreamShadow };

/** Shadow mode's comparison, when the twin runs beside a real robot. */
export interface ShadowProvider {
  latest(): StreamShadow;
}

/** Detected markers, when the robot has a detector: the latest detection, cheap to read (no work per call). */
export interface MarkerProvider {
  latest(): readonly StreamMarker[];
}

export function describeRobot(
  robot: Robot,
  chains: readonly string[],
  features: RobotDescription['features'],
  name: string | null = null,
): RobotDescription {
  const config = robot.config;
  return {
    type: 'hello',
    robot: config.name,
    name,
    backend: robot.backend.kind,
    motors: robot.motors.map((m) => ({
      name: m.name,
      id: m.id,
      model: m.spec.name,
      lowerLimit: m.lowerLimit,
      upperLimit: m.upperLimit,
      joint: m.name,
      frame: { orientation: m.frame.orientation, offset: m.frame.offset },
    })),
    chains,
    camera: config.camera ? { resolution: config.camera.resolution } : null,
    table: config.world.table,
    maxRate: MAX_RATE,
    features,
  };
}

/** Records attach their recorders and players to the manager as `_<move>_recorder` / `_<move>_player`. */
const RECORD_PRIMITIVE = /^_(.+)_(recorder|player)$/;

export function robotState(
  seq: number,
  robot: Robot,
  primitives: PrimitiveManager,
  markers: MarkerProvider | undefined,
  shadow?: ShadowProvider,
): RobotState {
  const running: string[] = [];
  const paused: string[] = [];
  const recording: string[] = [];
  const playing: string[] = [];
  for (const p of primitives.runningList()) {
    const record = RECORD_PRIMITIVE.exec(p.name);
    if (record) (record[2] === 'recorder' ? recording : playing).push(record[1]!);
    else (p.state === 'paused' ? paused : running).push(p.name);
  }
  const ms = robot.motors;
  return {
    type: 'state',
    seq,
    time: round(robot.clock.now(), 1000),
    tick: robot.ticks,
    present: ms.map((m) => m.state.presentPosition),
    goal: ms.map((m) => round(m.commands.goalPosition, 100)),
    joint: ms.map((m) => round(userToJoint(m.frame, m.state.presentPosition), 1e5)),
    compliant: ms.map((m) => m.commands.compliant),
    speed: ms.map((m) => m.state.presentSpeed),
    load: ms.map((m) => m.state.presentLoad),
    temperature: ms.map((m) => m.state.presentTemperature),
    moving: ms.map((m) => robot.isMoving(m)),
    primitives: { running, paused },
    records: { recording, playing },
    markers: markers ? markers.latest() : null,
    shadow: shadow ? shadow.latest() : null,
  };
}

function round(x: number, scale: number): number {
  return Math.round(x * scale) / scale + 0;
}

/** A link's visuals as JSON; a mesh's vertices to 0.01 mm. */
function sceneLink(link: UrdfLink): SceneLink {
  return {
    name: link.name,
    visuals: link.visuals.map((shape) =>
      shape.geometry.kind === 'mesh'
        ? {
            ...shape,
            geometry: {
              ...shape.geometry,
              triangles: Array.from(shape.geometry.triangles, (v) => round(v, 1e5)),
            },
          }
        : { ...shape, geometry: shape.geometry },
    ),
  };
}

/** The twin scene's inputs as JSON (the URDF's link map becomes a list, each link its visuals). */
export function sceneDescription(robot: Robot, urdf: UrdfRobot): SceneDescription {
  const { world, camera } = robot.config;
  return {
    urdf: {
      name: urdf.name,
      root: urdf.root,
      links: [...urdf.links.values()].map(sceneLink),
      joints: urdf.joints,
    },
    table: world.table,
    cards: world.cards.map((c) => ({ ...c, home: { xyz: c.xyz, rpy: c.rpy } })),
    camera,
  };
}
