/**
 * The web view's viewers for bench/ui.ts, in their own process: `tsx bench/ui-viewers.ts <ws url> <count> <rate>`.
 * Real viewers are browsers on other machines; here they must at least not share the event loop of the REST load
 * generator, whose latency figures would otherwise include the time it spent counting the viewers' frames.
 * On stdio: prints "open" once every socket is open; "start" on stdin zeroes the counts; "stop" prints the frames
 * each viewer received since "start" as one JSON line, closes the sockets and exits.
 */
import { createInterface } from 'node:readline';
import WebSocket from 'ws';

const [url, countText = '10', rateText = '50'] = process.argv.slice(2);
if (!url) throw new Error('usage: ui-viewers.ts <ws url> <count> <rate>');
const frames = new Array<number>(Number(countText)).fill(0);
const sockets = await Promise.all(
  frames.map((_, i) => {
    const socket = new WebSocket(`${url}?rate=${rateText}`);
    socket.on('message', () => frames[i]!++);
    return new Promise<WebSocket>((resolve, reject) => {
      socket.once('open', () => resolve(socket));
      socket.once('error', reject);
    });
  }),
);
console.log('open');
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'start') frames.fill(0);
  if (line === 'stop') {
    console.log(JSON.stringify(frames));
    for (const s of sockets) s.close();
    process.exit(0);
  }
}
