/**
 * The shadow twin's ghost (docs/shadow.md): a second copy of the robot, built by the same
 * TwinScene from the same URDF, drawn translucent over the real one at the twin's angles. The links a motor moves
 * (its joint's child and what is fixed to it) share one material, tinted while that motor's twin and robot disagree.
 */
import * as THREE from 'three';
import { jointToUser, userToJoint } from '../../core/frames.ts';
import { TwinScene } from '../../scene/twin-scene.ts';
import type { UrdfRobot } from '../../urdf/types.ts';
import type { RobotDescription, RobotState, StreamShadow } from '../protocol.ts';

/** How a motor's shadow state is shown: as agreeing, drifting within no event yet, or an event. */
export type ShadowTint = 'agree' | 'diverging' | 'event';

/**
 * 'agree', 'compliant' (the twin follows the hand) and 'paused' (a calibration run, not judged) are fine; 'diverging'
 * is on its way, and 'touching' (a contact one side presses and the other does not) differs without an event; the
 * rest are events.
 */
export function shadowTint(state: string | undefined): ShadowTint {
  if (state === undefined || state === 'agree' || state === 'compliant' || state === 'paused') return 'agree';
  return state === 'diverging' || state === 'touching' ? 'diverging' : 'event';
}

const COLOURS: Record<ShadowTint, number> = { agree: 0x60a5fa, diverging: 0xf59e0b, event: 0xef4444 };
/** A tinted link is drawn a little more opaque, so that it stands out of the ghost. */
const OPACITY: Record<ShadowTint, number> = { agree: 0.3, diverging: 0.45, event: 0.45 };

function ghostMaterial(): THREE.MeshLambertMaterial {
  return new THREE.MeshLambertMaterial({
    color: COLOURS.agree,
    transparent: true,
    opacity: OPACITY.agree,
    // Drawn over the robot where they coincide (pulled towards the camera), never hiding itself.
    depthWrite: false,
    polygonOffset: true,
    polygonOffsetFactor: -1,
    polygonOffsetUnits: -4,
  });
}

export class Ghost {
  /** The ghost's root link: add it to the scene the robot is drawn in. */
  readonly root: THREE.Object3D;
  readonly #twin: TwinScene;
  readonly #description: RobotDescription;
  /** Per motor, then one for the links no motor moves. */
  readonly #materials: THREE.MeshLambertMaterial[];
  readonly #tints: ShadowTint[];
  readonly #angles = new Map<string, number>();

  constructor(urdf: UrdfRobot, description: RobotDescription) {
    this.#description = description;
    this.#twin = new TwinScene({ urdf, table: null, cards: [], camera: null });
    this.root = this.#twin.link(urdf.root)!;
    this.root.name = 'ghost';
    const { motors } = description;
    this.#materials = [...motors, null].map(ghostMaterial);
    this.#tints = motors.map(() => 'agree');

    const motorOfJoint = new Map(motors.map((m, i) => [m.joint, i]));
    const parentJoint = new Map(urdf.joints.map((j) => [j.child, j]));
    const motorOf = (link: string): number => {
      const joint = parentJoint.get(link);
      if (!joint) return motors.length; // the root
      if (joint.type === 'fixed') return motorOf(joint.parent);
      return motorOfJoint.get(joint.name) ?? motors.length;
    };
    for (const name of urdf.links.keys()) {
      const material = this.#materials[motorOf(name)]!;
      for (const child of this.#twin.link(name)!.children)
        if (child instanceof THREE.Mesh) {
          (child.material as THREE.Material).dispose();
          child.material = material;
        }
    }
  }

  /** Poses the ghost at the twin's angles (the robot's own where the twin has no reading yet) and tints it. */
  update(state: RobotState, shadow: StreamShadow): void {
    const { motors } = this.#description;
    for (let i = 0; i < motors.length; i++) {
      const m = motors[i]!;
      const twin = shadow.twin[i];
      this.#angles.set(m.joint, twin == null ? (state.joint[i] ?? 0) : userToJoint(m.frame, twin));
      const tint = shadowTint(shadow.state[i]);
      if (tint !== this.#tints[i]) {
        this.#tints[i] = tint;
        this.#materials[i]!.color.setHex(COLOURS[tint]);
        this.#materials[i]!.opacity = OPACITY[tint];
      }
    }
    this.#twin.setJointAngles(this.#angles);
  }

  /** A motor's angle as the ghost is drawn, user degrees (read back from its link); undefined for no such motor. */
  jointAngle(motor: string): number | undefined {
    const m = this.#description.motors.find((d) => d.name === motor);
    const rad = m && this.#twin.jointValue(m.joint);
    return m && rad !== undefined ? jointToUser(m.frame, rad) : undefined;
  }

  link(name: string): THREE.Object3D | undefined {
    return this.#twin.link(name);
  }

  /** The colour a link is drawn in, '#rrggbb'; undefined for no such link or one without a body. */
  linkColour(name: string): string | undefined {
    const mesh = this.#twin.link(name)?.children.find((c) => c instanceof THREE.Mesh);
    return mesh && `#${((mesh as THREE.Mesh).material as THREE.MeshLambertMaterial).color.getHexString()}`;
  }
}
