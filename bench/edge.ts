/** `npx tsx bench/edge.ts`: the HTTP layer against a trivial fastify route alone (BENCH_QUICK=1: 3 short rounds). */
import { edgeReport, runEdgeBench } from './server.ts';

const quick = process.env.BENCH_QUICK === '1';
for (const line of edgeReport(await runEdgeBench(quick ? 3 : 7, quick ? 2 : 3))) console.log(line);
process.exit(0);
