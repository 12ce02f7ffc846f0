/**
 * A serial binding onto the emulated bus in memory: what the host writes reaches the servos on a later turn of the
 * event loop, their replies come back the same way, at the bus's wire timing. Unit tests run the bus driver, the
 * sync loop and the Backend contract on it without socat; the pseudo-terminal stays the end-to-end path.
 */
import type { SerialBinding, SerialConnection } from '../real/serial-binding.ts';
import type { EmulatedBus } from './bus.ts';

/** Paths this binding serves: one bus each. An exclusive lock per path, as serialport's. */
export function memoryBinding(buses: Readonly<Record<string, EmulatedBus>>): SerialBinding {
  const locked = new Set<string>();
  return {
    async open({ path, baudRate, lock }): Promise<SerialConnection> {
      const bus = buses[path];
      if (!bus) throw new Error(`Error: No such file or directory, cannot open ${path}`);
      if (locked.has(path)) throw new Error('Error Resource temporarily unavailable Cannot lock port');
      if (lock) locked.add(path);
      let listener: ((chunk: Uint8Array) => void) | undefined;
      let open = true;
      const receive = bus.connect(
        (bytes) => {
          const copy = bytes.slice();
          setImmediate(() => {
            if (open) listener?.(copy);
          });
        },
        async () => baudRate,
      );
      return {
        write(bytes) {
          const copy = bytes.slice();
          return new Promise<void>((resolve) => {
            setImmediate(() => {
              if (open) receive(copy);
              resolve();
            });
          });
        },
        onData(l) {
          listener = l;
        },
        async close() {
          open = false;
          if (lock) locked.delete(path);
        },
      };
    },
  };
}
