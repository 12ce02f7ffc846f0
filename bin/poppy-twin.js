#!/usr/bin/env node
// `npx poppy-twin [flags]` and `npm start`: the built server (dist/, made by scripts/build.js at `npm ci`) in this
// very process, so a signal sent to the process the user started reaches the server. When src/ changed since the
// build, it is rebuilt first (about half a second): a start never runs code older than its sources.
// `npx poppy-twin service ...` runs the systemd service's commands instead (src/service/).
// The Node version is checked first, before any module that an older Node could not load.
import process from 'node:process';
import { exitIfNodeTooOld } from '../scripts/node-floor.js';

exitIfNodeTooOld();
const { buildIfStale } = await import('../scripts/build.js');
await buildIfStale();
if (process.argv[2] === 'service') {
  process.argv.splice(2, 1); // dist/service.js reads the words after it, as `node dist/service.js install` gives them
  await import('../dist/service.js');
} else await import('../dist/main.js');
