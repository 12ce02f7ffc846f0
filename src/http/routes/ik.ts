import { gotoPath } from '../../robot/trajectory.ts';
import { z } from 'zod';
import { notFound } from '../../core/errors.ts';
import type { KinematicChain } from '../../ik/chain.ts';
import { REACH_TOLERANCE_M, outOfReach, unreachableError } from '../../ik/reach.ts';
import { rpyMatrix, solve, type IkSolution, type IkTarget } from '../../ik/solver.ts';
import type { Mat3 } from '../../urdf/transform.ts';
import type { Motor } from '../../robot/motor.ts';
import { defaultProfile, type MotionPolicy } from '../profile.ts';
import { schemaFailure } from '../errors.ts';
import type { Robot } from '../../robot/robot.ts';
import { objectBody } from '../body.ts';
import { route, type RouteSpec } from '../route.ts';
import { duration, forceQuery, lenientNumber, triple, wait } from '../schema.ts';
import { GUARD_NOTE, arrivalFields, motorArrival, waitGoto } from './motors.ts';

const GOTO_TIP =
  'send {"xyz": "0.1,-0.15,0.12", "duration": 2, "wait": true}; optional "rot": "a,b,c" (X axis of the end) or "rpy": "r,p,y" (radians)';
const RPY_TIP = 'send {"r": 0, "p": 0.5, "y": 1.57} (radians) as a JSON body or as ?r=0&p=0.5&y=1.57';

const round4 = (v: number) => Math.round(v * 1e4) / 1e4 + 0;

function join4(values: ArrayLike<number>): string {
  return Array.from(values, (v) => String(round4(v))).join(',');
}

/** value.json / goto.json answer: position and the X axis (first column) of the end frame. */
function poseAnswer(pose: { position: ArrayLike<number>; rotation: Mat3 }) {
  const r = pose.rotation;
  return { xyz: join4(pose.position), rot: join4([r[0], r[3], r[6]]) };
}

const gotoBody = z.object({
  xyz: triple.meta({ description: 'target position of the end, metres, base frame' }),
  rot: triple
    .refine((v) => Math.hypot(v[0]!, v[1]!, v[2]!) >= 1e-9, { error: 'must not be the zero vector' })
    .nullish()
    .meta({ description: 'target X axis of the end frame ("a,b,c")' }),
  rpy: triple.nullish().meta({ description: 'full target orientation, radians ("r,p,y"); overrides rot' }),
  duration,
  wait,
});

const rpyBody = z.object({ r: lenientNumber, p: lenientNumber, y: lenientNumber });

const poseSchema = z.object({
  xyz: z.string().meta({ description: '"x,y,z" metres, 4 decimals' }),
  rot: z.string().meta({ description: '"a,b,c": X axis of the end frame, 4 decimals' }),
});

const gotoAnswer = poseSchema.extend({
  cancelled: z.boolean().optional().meta({
    description: 'with wait only: true when a newer command took a motor over before the end (beyond v4)',
  }),
  ...arrivalFields,
  tip: z.string().optional().meta({
    description: 'with wait, default profile: "x,y,z", where the end is at the answer, metres (beyond v4)',
  }),
  distance: z.number().optional().meta({
    description: 'with wait, default profile: metres from the end to the target at the answer (beyond v4)',
  }),
});

const UNREACHABLE_NOTE =
  'In the default profile a target whose position is out of reach (more than 1 mm from the nearest point the end ' +
  'can reach) is refused with 422 before anything moves; the pypot profile sends the chain to the closest pose. ';

export function ikRoutes(
  robot: Robot,
  chains: ReadonlyMap<string, KinematicChain>,
  policy: MotionPolicy = defaultProfile.policy,
): RouteSpec[] {
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
  /** A waited IK goto's arrival: its motors' (reached only if the solved pose is on the target too) and the end's. */
  const chainArrival = (
    chain: KinematicChain,
    targets: ReadonlyMap<Motor, number>,
    solution: IkSolution,
    xyz: readonly number[],
  ) => {
    const motors = motorArrival(targets);
    const tip = chain.forward(present(chain)).position;
    return {
      ...motors,
      reached: motors.reached && solution.positionError <= REACH_TOLERANCE_M,
      tip: join4(tip),
      distance: round4(Math.hypot(tip[0] - xyz[0]!, tip[1] - xyz[1]!, tip[2] - xyz[2]!)),
    };
  };

  return [
    route({
      method: 'GET',
      path: '/ik/:chain/value.json',
      summary: 'end position (m) and X axis of a chain, from the present pose',
      answer: poseSchema,
      examples: { answer: { xyz: '0.0011,-0.0352,0.2148', rot: '0.0,1.0,0.0' } },
      handler: ({ params }) => {
        const chain = chainOf(params.chain);
        return poseAnswer(chain.forward(present(chain)));
      },
    }),
    route({
      method: 'POST',
      path: '/ik/:chain/goto.json',
      summary: 'move a chain to a cartesian position (and orientation) over a duration',
      description:
        'The answer is the pose the chain is commanded to reach; with wait (default profile) also whether it ' +
        'arrived. ' +
        UNREACHABLE_NOTE +
        GUARD_NOTE,
      body: gotoBody,
      tip: GOTO_TIP,
      answer: gotoAnswer,
      examples: {
        body: { xyz: '0.1,-0.15,0.12', duration: 2, wait: true },
        answer: {
          xyz: '0.1,-0.15,0.12',
          rot: '0.3162,-0.9487,0.0',
          cancelled: false,
          reached: false,
          error: { m1: 0.81, m2: 4.3, m3: 5.12, m4: 1.4, m5: -0.3, m6: -1.05 },
          tolerance: { m1: 2.74, m2: 2.74, m3: 2.74, m4: 2.74, m5: 2.74, m6: 2.74 },
          tip: '0.1043,-0.1391,0.1019',
          distance: 0.0244,
        },
      },
      handler: async (request) => {
        const { params, body, query } = request;
        forceQuery(query);
        const chain = chainOf(params.chain);
        const target: { -readonly [K in keyof IkTarget]: IkTarget[K] } = { position: body.xyz };
        if (body.rpy) target.rotation = rpyMatrix(body.rpy[0]!, body.rpy[1]!, body.rpy[2]!);
        else if (body.rot) target.rot = body.rot;
        const seed = present(chain);
        const solution = solve(chain, target, seed);
        if (policy.refuseUnreachable) {
          const out = outOfReach(chain, target, solution, seed);
          if (out) throw unreachableError(chain, body.xyz, out);
        }
        const targets = new Map<Motor, number>();
        chain.motors.forEach((name, i) => {
          if (!chain.passive[i]) targets.set(robot.motor(name), solution.userDegrees[i]!);
        });
        await policy.guard?.(
          gotoPath(new Map([...targets].map(([m, to]) => [m, m.clampAngle(to)])), body.duration),
          forceQuery(query),
        );
        const started = robot.goto(targets, body.duration, { compliant: policy.compliantGoto });
        if (!body.wait) return poseAnswer(solution);
        const { cancelled } = await waitGoto(robot, policy, started, request.clientGone);
        const answer = { ...poseAnswer(solution), cancelled };
        return policy.reportArrival
          ? { ...answer, ...chainArrival(chain, started.targets, solution, body.xyz) }
          : answer;
      },
    }),
    route({
      method: 'GET',
      path: '/ik/:chain/rpy.json',
      summary: 'rotation matrix Rz(y) Ry(p) Rx(r) of roll, pitch, yaw in radians (JSON body or query string)',
      getWithBody: true,
      tip: RPY_TIP,
      answer: z.object({ rpy: z.array(z.array(z.number())) }),
      examples: {
        answer: {
          rpy: [
            [1, 0, 0],
            [0, 1, 0],
            [0, 0, 1],
          ],
        },
      },
      handler: ({ params, body, query }) => {
        chainOf(params.chain);
        const fields = body.kind !== 'none' ? objectBody(body, RPY_TIP) : query;
        const parsed = rpyBody.safeParse(fields);
        if (!parsed.success) throw schemaFailure(parsed.error, fields, RPY_TIP);
        const { r, p, y } = parsed.data;
        return { rpy: rpyMatrix(r, p, y) };
      },
    }),
  ];
}
