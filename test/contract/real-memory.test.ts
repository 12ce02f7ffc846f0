/**
 * The Backend contract on the real backend with its bus side in this process, on the in-memory binding onto the
 * emulated bus: the driver, the sync loop and the messages of the bus process, without socat or a fork. The same
 * contract runs over a real pseudo-terminal and a bus process in real.test.ts (the end-to-end path).
 */
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { memoryBinding } from '../../src/emulator/memory-binding.ts';
import { RealBackend } from '../../src/real/backend.ts';
import { inProcessBus } from '../../src/real/bus-host.ts';
import { backendContract } from './backend.contract.ts';

for (const robot of ['ergo-jr', 'torso']) {
  describe(`real backend on the in-memory bus (${robot})`, function () {
    let emulated: Awaited<ReturnType<typeof emulateBus>> | undefined;
    before(async function () {
      this.timeout(20000);
      emulated = await emulateBus({ robot, speed: 'manual' });
    });
    after(async () => {
      await emulated?.close();
    });
    backendContract(`real in memory (${robot})`, async () => {
      const config = await loadRobotConfig(robot);
      const binding = memoryBinding({ '/dev/mem0': emulated!.bus });
      return new RealBackend({ config, serial: '/dev/mem0', timeoutMs: 50, busHost: inProcessBus(binding) });
    });
  });
}
