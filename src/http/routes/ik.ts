import { badRequest, notFound } from '../../core/errors.ts';
import { describe, parseDuration, parseNumber, parseNumberArray, parseWait } from '../../core/values.ts';
import type { KinematicChain } from '../../ik/chain.ts';
import { rpyMatrix, solve, type IkTarget } from '../../ik/solver.ts';
import type { Mat3 } from '../../urdf/transform.ts';
import type { Motor } from '../../robot/motor.ts';
import type { Robot } from '../../robot/robot.ts';
import { type Body, objectBody } from '../body.ts';
import type { RouteSpec } from '../route.ts';

const GOTO_TIP =
  'send {"xyz": "0.1,-0.15,0.12", "duration": 2, "wait": true}; optional "rot": "a,b,c" (X axis of the end) or "rpy": "r,p,y" (radians)';
const RPY_TIP = 'send {"r": 0, "p": 0.5, "y": 1.57} (radians) as a JSON body or as ?r=0&p=0.5&y=1.57';

function join4(values: ArrayLike<number>): string {
  return Array.from(values, (v) => String(Math.round(v * 1e4) / 1e4 + 0)).join(',');
}

/** value.json / goto.json answer: position and the X axis (first column) of the end frame. */
function poseAnswer(pose: { position: ArrayLike<number>; rotation: Mat3 }) {
  const r = pose.rotation;
  return { xyz: join4(pose.position), rot: join4([r[0], r[3], r[6]]) };
}

function triple(value: unknown, what: string): number[] {
  return parseNumberArray(value, 3, what);
}

export function ikRoutes(robot: Robot, chains: ReadonlyMap<string, KinematicChain>): RouteSpec[] {
  const chainOf = (name: string): KinematicChain => {
    const c = chains.get(name);
    if (!c)
      throw notFound(
        `chain "${name}" does not exist`,
        chains.size ? `chains of this robot: ${[...chains.keys()].join(', ')}` : 'this robot has no IK chain',
        `robot ${robot.config.name}`,
      );
    return c;
  };
  const present = (chain: KinematicChain) => chain.motors.map((m) => robot.motor(m).state.presentPosition);

  return [
    {
      method: 'GET',
      path: '/ik/:chain/value.json',
      summary: 'end position (m) and X axis of a chain, from the present pose',
      handler: ({ params }) => {
        const chain = chainOf(params.chain!);
        return poseAnswer(chain.forward(present(chain)));
      },
    },
    {
      method: 'POST',
      path: '/ik/:chain/goto.json',
      summary: 'move a chain to a cartesian position (and orientation) over a duration',
      handler: async ({ params, body, clientGone }) => {
        const chain = chainOf(params.chain!);
        const b = objectBody(body, GOTO_TIP);
        if (b.xyz === undefined) throw badRequest('xyz is missing', GOTO_TIP);
        const target: { -readonly [K in keyof IkTarget]: IkTarget[K] } = { position: triple(b.xyz, 'xyz') };
        if (b.rpy !== undefined && b.rpy !== null) {
          const [r, p, y] = triple(b.rpy, 'rpy');
          target.rotation = rpyMatrix(r!, p!, y!);
        } else if (b.rot !== undefined && b.rot !== null) {
          const rot = triple(b.rot, 'rot');
          if (Math.hypot(rot[0]!, rot[1]!, rot[2]!) < 1e-9)
            throw badRequest('rot must not be the zero vector', GOTO_TIP, `got ${describe(b.rot)}`);
          target.rot = rot;
        }
        const duration = parseDuration(b.duration);
        const wait = parseWait(b.wait);
        const solution = solve(chain, target, present(chain));
        const targets = new Map<Motor, number>();
        chain.motors.forEach((name, i) => {
          if (!chain.passive[i]) targets.set(robot.motor(name), solution.userDegrees[i]!);
        });
        const { done } = robot.goto(targets, duration);
        const outcome = wait ? await robot.waitFor(done, clientGone) : undefined;
        return { ...poseAnswer(solution), ...(outcome && { cancelled: outcome.cancelled }) };
      },
    },
    {
      method: 'GET',
      path: '/ik/:chain/rpy.json',
      summary: 'rotation matrix Rz(y) Ry(p) Rx(r) of roll, pitch, yaw in radians (JSON body or query string)',
      getWithBody: true,
      handler: ({ params, body, query }) => {
        chainOf(params.chain!);
        const fields = rpyFields(body, query);
        const angles = (['r', 'p', 'y'] as const).map((k) => {
          if (fields[k] === undefined) throw badRequest(`${k} is missing`, RPY_TIP);
          return parseNumber(fields[k], k);
        });
        return { rpy: rpyMatrix(angles[0]!, angles[1]!, angles[2]!) };
      },
    },
  ];
}

function rpyFields(body: Body, query: Readonly<Record<string, string>>): Record<string, unknown> {
  if (body.kind !== 'none') return objectBody(body, RPY_TIP);
  return query;
}
