/**
 * The Backend contract on a real Dynamixel bus: runs when POPPY_SERIAL_PORT names the serial port of a powered robot
 * (POPPY_ROBOT picks its config, default ergo-jr). Otherwise, and until the real backend exists, it is pending.
 */
import { backendContract } from './backend.contract.ts';

const port = process.env.POPPY_SERIAL_PORT;

if (!port) {
  describe('Backend contract: real Dynamixel bus', () => {
    it.skip('pending: set POPPY_SERIAL_PORT=/dev/ttyUSB0 (and POPPY_ROBOT) with a powered robot to run it');
  });
} else {
  backendContract(`real (${port})`, async () => {
    // The real backend (Dynamixel serial bus) is not built yet: the whole suite shows as pending until it is.
    // When it exists, build it here from loadRobotConfig(process.env.POPPY_ROBOT ?? 'ergo-jr') and `port`.
    return undefined;
  });
}
