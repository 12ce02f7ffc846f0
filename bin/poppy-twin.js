#!/usr/bin/env node
// `npx poppy-twin [flags]`: the server in this very process (tsx's loader registered in-process, no child), so
// a signal sent to the process the user started reaches the server.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
