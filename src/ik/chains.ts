import type { RobotConfig } from '../config/robot-config.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { KinematicChain } from './chain.ts';

/** The robot's IK chains by name, built once from its URDF and config. */
export function buildChains(config: RobotConfig, urdf: UrdfRobot): Map<string, KinematicChain> {
  const chains = new Map<string, KinematicChain>();
  for (const [name, cfg] of Object.entries(config.chains))
    chains.set(name, KinematicChain.fromUrdf(urdf, name, cfg, config.motors));
  return chains;
}
