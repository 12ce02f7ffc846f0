#!/usr/bin/env node
// `npx poppy-twin [flags]` and `npm start`: the built server (dist/, made by scripts/build.js at `npm ci`) in this
// very process, so a signal sent to the process the user started reaches the server. When src/ changed since the
// build, it is rebuilt first (about half a second): a start never runs code older than its sources.
import { buildIfStale } from '../scripts/build.js';

await buildIfStale();
await import('../dist/main.js');
