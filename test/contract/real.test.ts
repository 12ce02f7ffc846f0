/**
 * The Backend contract on the real backend: over the bus emulator on a real pseudo-terminal for the Ergo Jr
 * (protocol 2.0) and the Torso (protocol 1.0), and on a real robot when POPPY_SERIAL_PORT names the serial port of a
 * powered one (POPPY_ROBOT picks its config, default ergo-jr); that last suite is pending otherwise.
 */
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { RealBackend } from '../../src/real/backend.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { backendContract } from './backend.contract.ts';

for (const robot of ['ergo-jr', 'torso']) {
  describe(`real backend over the bus emulator (${robot})`, function () {
    let emulator: RunningEmulator;
    before(async function () {
      this.timeout(20000);
      // The contract needs the servos' registers, not their motion: the physics behind them stands still, so that
      // its steps do not compete with the serial exchanges on this busy test process.
      emulator = await startEmulator({ robot, speed: 'manual' });
    });
    after(async () => {
      await emulator?.close();
    });
    backendContract(`real over the emulator (${robot})`, async () => {
      const config = await loadRobotConfig(robot);
      return new RealBackend({ config, serial: await emulator.addPort(), timeoutMs: 250 });
    });
  });
}

const port = process.env.POPPY_SERIAL_PORT;
if (!port) {
  describe('Backend contract: real Dynamixel bus', () => {
    it.skip('pending: set POPPY_SERIAL_PORT=/dev/ttyUSB0 (and POPPY_ROBOT) with a powered robot to run it');
  });
} else {
  backendContract(`real (${port})`, async () => {
    const config = await loadRobotConfig(process.env.POPPY_ROBOT ?? 'ergo-jr');
    return new RealBackend({ config, serial: port, lock: false });
  });
}
