/** The Backend contract on the simulated bus, for the three robots (manual clock). */
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { backendContract } from './backend.contract.ts';

for (const robot of ['ergo-jr', 'torso', 'humanoid']) {
  backendContract(`sim (${robot})`, async () => {
    const config = await loadRobotConfig(robot);
    const urdf = await loadUrdf(config.urdfPath);
    return new SimBackend({ config, urdf, speed: 'manual' });
  });
}
