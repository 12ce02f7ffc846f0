/**
 * What one joint of a robot carries, from its URDF alone (no physics): the gravity torque of the links beyond it about
 * its axis at any angle, the other joints where they are, and their inertia about the axis. With the reference
 * integrator (fidelity.ts runReference) it predicts where a limp or weakly held joint of the robot ends.
 */
import type { UrdfRobot } from '../urdf/types.ts';
import { loadUrdf } from '../urdf/parse.ts';
import { loadRobotConfig } from '../config/robot-config.ts';
import { userToRaw } from '../core/frames.ts';
import { linkPoses } from '../sim/link-poses.ts';
import { type V3, qrotate, vadd } from '../sim/quat.ts';
import { SimBackend } from '../sim/backend.ts';
import { frictionBudget, servoModel } from '../sim/servo-models.ts';
import { type LoadLaw, runReference } from './fidelity.ts';

const DEG = Math.PI / 180;

/** The joint's load law at the other joints' angles (rad by joint name; `joint`'s own is the law's argument). */
export function jointLoad(
  urdf: UrdfRobot,
  joint: string,
  angles: ReadonlyMap<string, number>,
  gravity = 9.81,
): LoadLaw {
  const j = urdf.joints.find((x) => x.name === joint);
  if (!j) throw new Error(`no joint ${joint}`);
  const subtree: string[] = [];
  const visit = (link: string): void => {
    subtree.push(link);
    for (const c of urdf.joints) if (c.parent === link) visit(c.child);
  };
  visit(j.child);
  const at = (q: number) => {
    const poses = linkPoses(urdf, new Map([...angles, [joint, q]]));
    const frame = poses.get(j.child)!;
    const n = Math.hypot(...j.axis);
    const axis = qrotate(frame.q, [j.axis[0] / n, j.axis[1] / n, j.axis[2] / n]);
    const parts = subtree.flatMap((name) => {
      const inertial = urdf.links.get(name)!.inertial;
      if (!inertial) return [];
      const pose = poses.get(name)!;
      const com = vadd(pose.p, qrotate(pose.q, inertial.com));
      const r: V3 = [com[0] - frame.p[0], com[1] - frame.p[1], com[2] - frame.p[2]];
      return [{ mass: inertial.mass, r, inertia: inertial.inertia, q: pose.q }];
    });
    return { axis, parts };
  };
  const start = at(angles.get(joint) ?? 0);
  let inertia = 0;
  for (const p of start.parts) {
    const a = start.axis;
    const along = p.r[0] * a[0] + p.r[1] * a[1] + p.r[2] * a[2];
    inertia += p.mass * (p.r[0] ** 2 + p.r[1] ** 2 + p.r[2] ** 2 - along * along);
    // The link's own tensor about the axis, the axis taken into the link's frame.
    const conj = { x: -p.q.x, y: -p.q.y, z: -p.q.z, w: p.q.w };
    const [x, y, z] = qrotate(conj, a);
    const [ixx, ixy, ixz, iyy, iyz, izz] = p.inertia;
    inertia += ixx * x * x + iyy * y * y + izz * z * z + 2 * (ixy * x * y + ixz * x * z + iyz * y * z);
  }
  return {
    inertia,
    torque: (q) => {
      const { axis, parts } = at(q);
      let cx = 0;
      let cy = 0;
      for (const p of parts) {
        cx += p.mass * p.r[0];
        cy += p.mass * p.r[1];
      }
      // (r x F) . axis with F = (0, 0, -m g)
      return -cy * gravity * axis[0] + cx * gravity * axis[1];
    },
  };
}

/** One joint of a robot made limp (limit 0) or held at a torque limit (%), the others stiff where they are. */
export interface JointCase {
  readonly robot: string;
  readonly motor: string;
  /** Where the joint is held first (user degrees), and the torque limit then (%; 0: made compliant). */
  readonly from: number;
  readonly limit: number;
  /** Leave the table out (the link's swing would meet it). */
  readonly noTable?: boolean;
  /** The other joints' angles (user degrees) while the joint swings; those not given stay at the start pose. */
  readonly pose?: Readonly<Record<string, number>>;
}

export interface JointCaseResult {
  /** Raw degrees: where the joint was held, where the twin and the one-joint reference end. */
  readonly start: number;
  readonly twin: number;
  readonly reference: number;
  /** Raw degrees about the reference's end where gravity is within the limp gearbox's friction (the friction band). */
  readonly band: readonly [number, number];
}

/** The twin (the whole robot in Rapier) against the one-joint law for the load the joint carries, over `seconds`. */
export async function runJointCase(c: JointCase, seconds = 4): Promise<JointCaseResult> {
  const loaded = await loadRobotConfig(c.robot);
  const config = c.noTable ? { ...loaded, world: { ...loaded.world, table: null } } : loaded;
  const urdf = await loadUrdf(config.urdfPath);
  const sim = new SimBackend({ config, urdf, speed: 'manual' });
  await sim.open();
  try {
    const m = config.motors.find((x) => x.name === c.motor);
    if (!m) throw new Error(`no motor ${c.motor} on ${c.robot}`);
    const ids = config.motors.map((x) => x.id);
    const others = Object.entries(c.pose ?? {}).map(([name, deg]): [number, number] => {
      const other = config.motors.find((x) => x.name === name);
      if (!other) throw new Error(`no motor ${name} on ${c.robot}`);
      return [other.id, userToRaw(other, deg)];
    });
    sim.simulation.setPose(new Map([...others, [m.id, userToRaw(m, c.from)]]));
    await sim.bus.write('goal_position', await sim.bus.read(ids, 'present_position'));
    await sim.bus.write('torque_enable', new Map(ids.map((i) => [i, 1])));
    await sim.advance(1);
    const angles = sim.jointAngles();
    const start = angles.get(c.motor)! / DEG;
    const torqueLimit = Math.round((c.limit / 100) * 1023);
    if (c.limit > 0) await sim.bus.write('torque_limit', new Map([[m.id, torqueLimit]]));
    else await sim.bus.write('torque_enable', new Map([[m.id, 0]]));
    await sim.advance(seconds);
    const twin = sim.jointAngles().get(c.motor)! / DEG;
    const spec = sim.models.get(m.id)!;
    const law = jointLoad(urdf, c.motor, angles);
    const ref = runReference(spec.name, law, {
      duration: seconds,
      start,
      torqueLimit: c.limit > 0 ? torqueLimit : 1023,
      at: () => ({ goal: start, torqueOn: c.limit > 0, external: 0 }),
    });
    const reference = ref.q.at(-1)!;
    const friction = servoModel(spec).friction;
    const holds = (deg: number) => {
      const tau = law.torque(deg * DEG);
      return Math.abs(tau) <= frictionBudget(friction, 0, 0, tau);
    };
    let lo = reference;
    let hi = reference;
    while (holds(lo - 0.1) && lo > reference - 180) lo -= 0.1;
    while (holds(hi + 0.1) && hi < reference + 180) hi += 0.1;
    return { start, twin, reference, band: [lo, hi] };
  } finally {
    await sim.close();
  }
}
