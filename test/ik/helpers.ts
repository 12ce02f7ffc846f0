import { loadRobotConfig, type RobotConfig } from '../../src/config/robot-config.ts';
import { KinematicChain } from '../../src/ik/chain.ts';
import { uniform } from '../../src/core/prng.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import type { UrdfRobot } from '../../src/urdf/types.ts';

export interface Loaded {
  readonly cfg: RobotConfig;
  readonly urdf: UrdfRobot;
}

const cache = new Map<string, Promise<Loaded>>();

export function loadRobot(robot: 'ergo-jr' | 'torso' | 'humanoid'): Promise<Loaded> {
  let p = cache.get(robot);
  if (!p) {
    p = loadRobotConfig(robot).then(async (cfg) => ({ cfg, urdf: await loadUrdf(cfg.urdfPath) }));
    cache.set(robot, p);
  }
  return p;
}

export async function loadChain(robot: 'ergo-jr' | 'torso', name: string): Promise<KinematicChain> {
  const { cfg, urdf } = await loadRobot(robot);
  return KinematicChain.fromUrdf(urdf, name, cfg.chains[name]!, cfg.motors);
}

/** Uniform random user-degree pose within the chain's joint limits. */
export function randomPose(chain: KinematicChain, rand: () => number): number[] {
  return chain.toUser(chain.lower.map((lo, j) => uniform(rand, lo, chain.upper[j]!)));
}
