/**
 * The emulator's end of the wire (src/emulator/pty.ts): on this platform it holds the pty's master itself (node-pty's
 * prebuilt binary), with socat as the fallback; a host pings every servo over either, closes its port and opens it
 * again (the emulator keeps the pty alive between hosts).
 */
import { expect } from 'chai';
import { instructions } from '../../src/dynamixel/packet.ts';
import { startEmulator } from '../../src/emulator/emulator.ts';
import { SerialLink } from '../../src/real/link.ts';

describe('the bus emulator on its pseudo-terminal', function () {
  this.timeout(20000);
  for (const wire of ['native', 'socat'] as const)
    it(`${wire}: every servo answers a ping, before and after the host reopens the port`, async () => {
      const emulator = await startEmulator({ robot: 'ergo-jr', speed: 'manual', wire });
      try {
        expect(emulator.wire).to.equal(wire);
        for (let round = 0; round < 2; round++) {
          // The wait bounds a failure only: a loaded machine (the whole suite in parallel) once took over 100 ms.
          const link = new SerialLink({ path: emulator.path, baud: 1_000_000, protocol: 2, timeoutMs: 1000 });
          await link.open();
          try {
            for (const id of [1, 2, 3, 4, 5, 6]) {
              const reply = await link.transact(instructions.ping(2, id), [id], 1000);
              expect(reply.packets.get(id)?.id, `round ${round}, servo ${id}`).to.equal(id);
            }
          } finally {
            await link.close();
          }
        }
      } finally {
        await emulator.close();
      }
    });
});
