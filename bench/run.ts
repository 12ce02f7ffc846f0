/** `npm run bench`: prints every figure with its target and the ratio. BENCH_QUICK=1 shortens the runs. */
import os from 'node:os';
import {
  edgeRatios,
  edgeReport,
  runEdgeBench,
  runFastModeBench,
  runLoadBench,
  runLoopDelayBench,
} from './server.ts';
import { runIdleMemoryBench, runStartBench, type StartFigure } from './start.ts';
import { runIkBench } from './ik.ts';
import { runDropHoldBench, runFidelityBench } from './fidelity.ts';
import { runArmatureBench } from './armature.ts';
import { runGotosBench } from './gotos.ts';
import { printVisionRealism, runVisionBench, runVisionRealismBench } from './vision.ts';
import { runGuardBench } from './guard.ts';
import { runShadowBench, runShadowHeld, runShadowSoak } from './shadow.ts';
import { realReport, runRealBench } from './real.ts';
import { runEncodeBench, runUiBench } from './ui.ts';

const quick = process.env.BENCH_QUICK === '1';

/** Start to the first answer of /motors/list.json, against a bare `node -e` server's (issue 31). */
function startRows(figures: readonly StartFigure[]): void {
  const goals: Record<string, number> = {
    'npm start': 1000,
    'node dist/main.js': 500,
    'npm start, Torso': 1000,
    'node dist/main.js, Torso': 500,
  };
  for (const f of figures) {
    const goal = goals[f.name];
    const line = `start to first answer, ${f.name}`;
    const value = `${f.medianMs.toFixed(0)} ms`;
    if (goal) row(line, value, `<= ${goal} ms`, f.medianMs <= goal, f.ratioToNode);
    else
      console.log(`      ${line.padEnd(52)} ${value.padStart(16)}   (${f.ratioToNode.toFixed(2)}x node -e)`);
    console.log(`            runs: ${f.runsMs.map((t) => t.toFixed(0)).join(', ')} ms`);
  }
  console.log(
    '      (ratio in brackets: to the bare node -e server of the same round, median of the rounds)',
  );
}

/** `npm run bench -- fidelity` runs the servo fidelity table alone. */
if (process.argv.includes('fidelity')) {
  await runFidelityBench();
  await runDropHoldBench();
  process.exit(0);
}
/** `npm run bench -- armature`: why the armature has an off-axis share (src/sim/build-world.ts). */
if (process.argv.includes('armature')) {
  await runArmatureBench();
  process.exit(0);
}
/** `npm run bench -- limp-rest [robot or config.json ...] [starts [seconds]]`: when a limp robot rests, from starts near its own. */
if (process.argv.includes('limp-rest')) {
  const { runLimpRestBench } = await import('./limp-rest.ts');
  const robots = process.argv.filter(
    (a) => ['ergo-jr', 'torso', 'humanoid'].includes(a) || a.endsWith('.json'),
  );
  const [starts = 8, seconds = 12] = process.argv.filter((a) => /^\d+$/.test(a)).map(Number);
  await runLimpRestBench(robots.length ? robots : ['ergo-jr', 'torso', 'humanoid'], starts, seconds);
  process.exit(0);
}
/** `npm run bench -- pi-budget [ergo-jr|torso ...] [share ...] [camera]`: a --shadow server in a Pi core's share. */
if (process.argv.includes('pi-budget')) {
  await import('./pi-budget.ts');
  process.exit(0);
}
/** `npm run bench -- step-cost [robot or config.json ...] [seconds]`: a step of the moving robot and Rapier's share. */
if (process.argv.includes('step-cost')) {
  const { runStepCostBench } = await import('./step-cost.ts');
  const robots = process.argv.filter(
    (a) => ['ergo-jr', 'torso', 'humanoid'].includes(a) || a.endsWith('.json'),
  );
  const [seconds = 4] = process.argv.filter((a) => /^\d+$/.test(a)).map(Number);
  await runStepCostBench(robots.length ? robots : ['ergo-jr', 'torso', 'humanoid'], seconds);
  process.exit(0);
}
/** `npm run bench -- classroom`: thirty twins in one process under a student's load each, and the capacity. */
if (process.argv.includes('classroom')) {
  const { runClassroomBench } = await import('./classroom.ts');
  await runClassroomBench();
  process.exit(0);
}
/** `npm run bench -- vision`: detection rates on realistic frames and the realistic camera's cost. */
if (process.argv.includes('vision')) {
  printVisionRealism(await runVisionRealismBench(quick));
  process.exit(0);
}
/** `npm run bench -- gotos`: how close a goto with wait ends to its target, per robot. */
if (process.argv.includes('gotos')) {
  await runGotosBench();
  process.exit(0);
}
/** `npm run bench -- guard`: the guard's prediction time of a 2 s Ergo Jr move (issue 29). */
if (process.argv.includes('guard')) {
  const r = await runGuardBench();
  console.log(
    `guard: a 2 s Ergo Jr move predicted ${r.runs} times: wall median ${r.timeMs.median.toFixed(1)} ms, p99 ${r.timeMs.p99.toFixed(1)} ms (target <= 100 ms); CPU median ${r.cpuMs.median.toFixed(1)} ms, p99 ${r.cpuMs.p99.toFixed(1)} ms`,
  );
  process.exit(0);
}
/**
 * BENCH_SHADOW_HZ and BENCH_SHADOW_ITERATIONS: the twin's physics rate and solver iterations in the shadow soaks
 * (default 500 Hz, 4; decisions/0076 tried 400 Hz, 0079 two iterations).
 */
const shadowPhysics = () => ({
  physicsHz: process.env.BENCH_SHADOW_HZ ? Number(process.env.BENCH_SHADOW_HZ) : undefined,
  solverIterations: process.env.BENCH_SHADOW_ITERATIONS
    ? Number(process.env.BENCH_SHADOW_ITERATIONS)
    : undefined,
});
/**
 * `npm run bench -- shadow-soak [ergo-jr|torso]`: the no-false-alarm soak of issue 29, BENCH_SOAK_SECONDS long
 * (default 600) per robot (both unless one is named); BENCH_SHADOW_HZ and BENCH_SHADOW_ITERATIONS the twin's physics;
 * BENCH_SOAK_SERVOS=<file> the emulator's servos, BENCH_SOAK_CALIBRATION=<file> the twin's (issue 45's check: the
 * bands from a fit, no false alarm over 10 minutes).
 */
if (process.argv.includes('shadow-soak')) {
  const seconds = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
  const named = ['ergo-jr', 'torso'].filter((r) => process.argv.includes(r));
  for (const robot of named.length ? named : ['ergo-jr', 'torso']) {
    const r = await runShadowSoak(robot, seconds, {
      ...shadowPhysics(),
      servoParams: process.env.BENCH_SOAK_SERVOS,
      calibration: process.env.BENCH_SOAK_CALIBRATION,
    });
    const w = r.worst;
    console.log(
      `shadow soak ${r.robot}: ${r.seconds.toFixed(0)} s, ${r.laps} laps (gotos, a replay both ways, a primitive, a hand move): ${r.events.length} events (goal 0); largest normal error ${w.error.toFixed(2)} deg on ${w.motor} against a band of ${w.band.toFixed(2)} deg (${((100 * w.error) / w.band).toFixed(0)} %)`,
    );
    for (const e of r.events) console.log(`  ${e}`);
  }
  process.exit(0);
}
/**
 * `npm run bench -- shadow-held [ergo-jr|torso]`: shadow mode on a robot as users hold it (issue 44), half the joints
 * limp and moved by the emulator's hand, BENCH_SOAK_SECONDS long (default 600) per robot (both unless one is named).
 * BENCH_HELD_SERVOS=<file> gives the emulator servos that are not the twin's, BENCH_HELD_CALIBRATION=<file> the twin
 * a calibration (issue 45: the bands from a fitted calibration), BENCH_HELD_LOG=<file> keeps the cycle log
 * (--shadow-log).
 */
if (process.argv.includes('shadow-held')) {
  const seconds = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
  const named = ['ergo-jr', 'torso'].filter((r) => process.argv.includes(r));
  for (const robot of named.length ? named : ['ergo-jr', 'torso']) {
    const r = await runShadowHeld(robot, seconds, {
      servoParams: process.env.BENCH_HELD_SERVOS,
      calibration: process.env.BENCH_HELD_CALIBRATION,
      shadowLog: process.env.BENCH_HELD_LOG,
      ...shadowPhysics(),
    });
    console.log(
      `shadow held ${r.robot}: ${r.seconds.toFixed(0)} s, ${r.laps} laps (gotos and a hand on the limp half, a primitive): ${r.events.length} events (goal 0), ${r.warnings.length} shadow warnings, ${r.touching.filter((l) => l.includes('the twin presses')).length} times the twin touching alone, ${r.touching.filter((l) => l.includes('the robot presses')).length} the robot, ${r.touching.filter((l) => l.includes('both press')).length} both`,
    );
    console.log(
      `  dead bands (deg): ${Object.entries(r.deadBands)
        .map(([m, b]) => `${m} ${b}`)
        .join(', ')}`,
    );
    for (const e of r.events) console.log(`  event: ${JSON.stringify(e)}`);
    for (const w of [...r.warnings, ...r.touching]) console.log(`  ${w}`);
  }
  process.exit(0);
}
/** `npm run bench -- shadow`: false alarms of shadow mode through everyday gotos (issue 29; the goal is none). */
if (process.argv.includes('shadow')) {
  for (const [i, r] of (await runShadowBench(quick ? 1 : 3)).entries()) {
    const w = r.worst;
    console.log(
      `shadow round ${i + 1}: ${r.events.length} events (goal 0); largest normal error ${w.error.toFixed(2)} deg on ${w.motor} against a band of ${w.band.toFixed(2)} deg (${((100 * w.error) / w.band).toFixed(0)} %)`,
    );
    console.log(
      `  bus loop with the twin: cycle start late p99 ${r.loop.p99LateMs.toFixed(2)} ms (target <= 2 ms), max ${r.loop.maxLateMs.toFixed(1)} ms; ${(100 * r.loop.rateShare).toFixed(1)} % of the 50 Hz cycles run; twin ${r.twin.msPerCycle.toFixed(2)} ms per cycle, ${(100 * r.twin.coreShare).toFixed(1)} % of a core`,
    );
    for (const e of r.events) console.log(`  ${e.error}`);
  }
  process.exit(0);
}
const fmt = (n: number, d = 1) => n.toFixed(d);
/** `npm run bench -- fast`: the fast-mode real-time factors alone (a check that the physics got no slower). */
if (process.argv.includes('fast')) {
  for (const r of await runFastModeBench(quick ? 2 : 4))
    console.log(
      `fast-mode real-time factor ${r.robot.padEnd(9)} moving ${fmt(r.moving)}x, still ${fmt(r.still)}x ` +
        `(${Math.round(r.stillResting * 100)} % of its steps at rest)`,
    );
  process.exit(0);
}

function row(name: string, value: string, target: string, ok: boolean, ratio?: number) {
  console.log(
    `${ok ? 'PASS' : 'MISS'}  ${name.padEnd(52)} ${value.padStart(16)}   target ${target}${ratio !== undefined ? `   (${fmt(ratio, 2)}x)` : ''}`,
  );
}

/** Idle Torso RSS, default physics code (lean at real time) and fast (issue 31: <= 120 MB). */
async function memoryRows(): Promise<void> {
  for (const m of await runIdleMemoryBench(3, quick ? 5 : 10)) {
    const runs = m.rssMb.map((mb) => mb.toFixed(0)).join(', ');
    const name = `idle Torso RSS, --physics ${m.physics}`;
    if (m.physics === 'auto') row(name, `${m.medianMb.toFixed(0)} MB`, '<= 120 MB', m.medianMb <= 120);
    else console.log(`      ${name.padEnd(52)} ${`${m.medianMb.toFixed(0)} MB`.padStart(16)}`);
    console.log(`            processes: ${runs} MB`);
  }
}

/** `npm run bench -- start`: the start-up and idle memory figures alone. */
if (process.argv.includes('start')) {
  startRows(await runStartBench(quick ? 3 : 7));
  await memoryRows();
  process.exit(0);
}

console.log(
  `bench on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), node ${process.version}, ${new Date().toISOString()}`,
);

console.log(
  '\n== HTTP, 10 connections, sim at real time (server process + autocannon client on this machine) ==',
);
const load = await runLoadBench(quick ? 3 : 10);
const reference: Record<string, number> = {
  'GET register value (Ergo Jr)': 7300,
  'GET /robot.json (Torso)': 2300,
};
for (const r of load) {
  console.log(
    `      ${r.name.padEnd(34)} ${fmt(r.requestsPerSecond, 0).padStart(7)} req/s  p50 ${fmt(r.p50Ms)} ms  p99 ${fmt(r.p99Ms)} ms  errors ${r.errors}  non-2xx ${r.non2xx}  sim RTF ${fmt(r.realTimeFactor, 3)}` +
      (reference[r.name]
        ? `  (${fmt(r.requestsPerSecond / reference[r.name]!, 2)}x pypot's ${reference[r.name]})`
        : ''),
  );
}
const reg = load.find((r) => r.name.startsWith('GET register'))!;
const robot = load.find((r) => r.name.startsWith('GET /robot.json'))!;
row(
  'GET register value req/s',
  fmt(reg.requestsPerSecond, 0),
  '>= 20000',
  reg.requestsPerSecond >= 20000,
  reg.requestsPerSecond / 20000,
);
row('GET register value p99', `${fmt(reg.p99Ms)} ms`, '<= 5 ms', reg.p99Ms <= 5);
row(
  'GET /robot.json (Torso) req/s',
  fmt(robot.requestsPerSecond, 0),
  '>= 8000',
  robot.requestsPerSecond >= 8000,
  robot.requestsPerSecond / 8000,
);
const minRtf = Math.min(...load.map((r) => r.realTimeFactor));
row('real-time factor kept under load (worst run)', fmt(minRtf, 3), '>= 0.99', minRtf >= 0.99);

console.log(
  '\n== HTTP layer against the framework ceiling: a trivial fastify route, then the Torso sim live at real time ==',
);
const edge = await runEdgeBench(quick ? 3 : 7, quick ? 2 : 3);
for (const line of edgeReport(edge)) console.log(line);
const edgeGoals = [
  ['register', 'GET register value (Torso)', 0.9],
  ['robot', 'GET /robot.json (Torso)', 0.8],
  ['goto', 'POST one-motor goto (Torso)', 0.6],
] as const;
for (const [target, name, goal] of edgeGoals) {
  const ratio = edgeRatios(edge, target);
  row(
    `${name} / trivial route, median of rounds`,
    `${fmt(ratio.paired, 2)}x`,
    `>= ${goal}x`,
    ratio.paired >= goal,
  );
}
const ours: readonly string[] = ['register', 'robot', 'goto'];
const spikes = edge.p99Ms.filter((r) => ours.includes(r.target));
const slow = spikes.filter((r) => r.ms > 20);
row(
  `runs of ${edge.seconds} s with p99 > 20 ms (of ${spikes.length})`,
  `${slow.length}`,
  '0',
  slow.length === 0,
);
const trivialSlow = edge.p99Ms.filter((r) => r.target === 'trivial' && r.ms > 20).length;
console.log(
  `            p99 of each run: ${spikes.map((r) => r.ms).join(', ')} ms; the trivial route's over 20 ms: ${trivialSlow}`,
);

console.log(
  '\n== Fast mode (--speed max), all motors stiff and stepping between -15 and -10 degrees every 0.4 sim s ==',
);
const targets: Record<string, number> = { 'ergo-jr': 50, torso: 20, humanoid: 10 };
for (const r of await runFastModeBench(quick ? 2 : 4)) {
  row(
    `fast-mode real-time factor ${r.robot}, moving`,
    `${fmt(r.moving)}x`,
    `>= ${targets[r.robot]}x`,
    r.moving >= targets[r.robot]!,
    r.moving / targets[r.robot]!,
  );
  console.log(
    `      ${r.robot} left still (the world at rest skips the solver): ${fmt(r.still)}x, ` +
      `${Math.round(r.stillResting * 100)} % of its steps at rest`,
  );
}

console.log(
  '\n== Event-loop delay of an idle server at real time (what a request may wait before it is read) ==',
);
for (const r of await runLoopDelayBench(quick ? 4 : 10))
  console.log(
    `      ${r.robot.padEnd(9)} p50 ${fmt(r.p50Ms, 2)} ms  p99 ${fmt(r.p99Ms, 2)} ms  max ${fmt(r.maxMs, 2)} ms  (1 ms resolution floor)`,
  );

console.log('\n== Start-up (first answer of GET /motors/list.json) ==');
startRows(await runStartBench(quick ? 3 : 5));
await memoryRows();

console.log('\n== IK (1000 reachable targets per chain and mode) ==');
for (const r of await runIkBench(quick ? 200 : 1000)) {
  const orient = r.orientationErrorDeg
    ? `  orient err median ${r.orientationErrorDeg.median.toExponential(1)} p99 ${r.orientationErrorDeg.p99.toExponential(1)} deg`
    : '';
  console.log(
    `      ${`${r.robot} ${r.chain} ${r.mode}`.padEnd(30)} success ${fmt(r.successRate * 100, 1)}%  pos err median ${r.positionErrorMm.median.toExponential(1)} p99 ${r.positionErrorMm.p99.toExponential(1)} mm${orient}  time median ${fmt(r.timeMs.median, 3)} p99 ${fmt(r.timeMs.p99, 2)} ms`,
  );
  const goal = r.mode === 'position' ? 0.995 : r.mode === 'rpy' ? 0.95 : 0.95;
  row(
    `IK ${r.chain} ${r.mode} success`,
    `${fmt(r.successRate * 100, 1)}%`,
    `>= ${goal * 100}%`,
    r.successRate >= goal,
  );
  row(`IK ${r.chain} ${r.mode} solve time p99`, `${fmt(r.timeMs.p99, 2)} ms`, '<= 5 ms', r.timeMs.p99 <= 5);
}

console.log('\n== Vision: rendered camera, PNG, marker detection (Ergo Jr) ==');
const vision = await runVisionBench(quick);
for (const [size, t] of Object.entries(vision.render))
  console.log(`      render ${size.padEnd(9)} median ${fmt(t.medianMs, 2)} ms  p99 ${fmt(t.p99Ms, 2)} ms`);
for (const [size, t] of Object.entries(vision.renderPng))
  console.log(
    `      render + PNG ${size.padEnd(9)} median ${fmt(t.medianMs, 2)} ms  p99 ${fmt(t.p99Ms, 2)} ms`,
  );
for (const [name, e] of Object.entries(vision.encoders))
  console.log(
    `      PNG 640x480 ${name.padEnd(34)} median ${fmt(e.medianMs, 2)} ms  p99 ${fmt(e.p99Ms, 2)} ms  ${e.bytes} bytes`,
  );
const rp = vision.renderPng['640x480']!;
row(
  '640x480 render + PNG median',
  `${fmt(rp.medianMs, 2)} ms`,
  '<= 15 ms',
  rp.medianMs <= 15,
  15 / rp.medianMs,
);
console.log(
  `      detect 640x480 without cards median ${fmt(vision.detectEmpty.medianMs, 2)} ms  p99 ${fmt(vision.detectEmpty.p99Ms, 2)} ms`,
);
row(
  'detection 640x480 (one card) median',
  `${fmt(vision.detectWithCard.medianMs, 2)} ms`,
  '<= 15 ms',
  vision.detectWithCard.medianMs <= 15,
  15 / vision.detectWithCard.medianMs,
);
const rate = vision.sweep.found / vision.sweep.trials;
row(
  `cards found, seeded sweep of ${vision.sweep.trials} (noise, blur)`,
  `${fmt(rate * 100, 1)}%`,
  '>= 99%',
  rate >= 0.99 && vision.sweep.wrong === 0,
);
row(
  `false detections over ${vision.falsePositives.frames} frames without cards`,
  String(vision.falsePositives.detections),
  '0',
  vision.falsePositives.detections === 0,
);
console.log(
  `      frame.png pulled back to back by one client: ${fmt(vision.framePng.requestsPerSecond, 0)} req/s`,
);
row(
  'sim real-time factor while frames are pulled',
  fmt(vision.framePng.realTimeFactor, 3),
  '>= 0.99',
  vision.framePng.realTimeFactor >= 0.99,
);

console.log(
  '\n== Web view stream: 10 WebSocket viewers at 50 Hz, REST at 1000 req/s (Ergo Jr, sim at real time) ==',
);
const ui = await runUiBench(quick ? 2 : 3, quick ? 2 : 5);
for (const r of ui)
  console.log(
    `      ${r.name.padEnd(13)} REST ${fmt(r.requestsPerSecond, 0)} req/s p50 ${fmt(r.p50Ms)} ms p99 ${fmt(r.p99Ms)} ms (rounds ${r.p99Rounds.join(', ')}) errors ${r.errors}` +
      (r.viewers ? `, ${fmt(r.framesPerSecond)} frames/s each` : '') +
      (Number.isNaN(r.realTimeFactor) ? '' : `, sim RTF ${fmt(r.realTimeFactor, 3)}`) +
      `, server CPU ${fmt(r.serverCpuPercent, 0)} %`,
  );
for (const e of await runEncodeBench())
  console.log(
    `      one state of ${e.robot.padEnd(8)} built + encoded once per tick: median ${fmt(e.encodeMedianUs)} us, p99 ${fmt(e.encodeP99Us)} us, ${e.bytes} bytes`,
  );
const withViewers = ui.find((r) => r.viewers === 10)!;
const floor = ui.find((r) => r.name === 'trivial route')!;
row(
  'frames per viewer per second (asked 50)',
  fmt(withViewers.framesPerSecond),
  '>= 45',
  withViewers.framesPerSecond >= 45,
);
row(
  'real-time factor with 10 viewers at 50 Hz',
  fmt(withViewers.realTimeFactor, 3),
  '>= 0.99',
  withViewers.realTimeFactor >= 0.99,
);
row('REST p99 with 10 viewers at 50 Hz', `${fmt(withViewers.p99Ms)} ms`, '< 5 ms', withViewers.p99Ms < 5);
console.log(
  `      (the trivial fastify route under the same load: p99 ${fmt(floor.p99Ms)} ms, this machine's and client's floor)`,
);
console.log('\n== Real backend over the bus emulator (emulator process, server here, autocannon process) ==');
const real = realReport(await runRealBench(quick));
for (const line of real.lines) console.log(line);
for (const r of real.rows) row(r.name, r.value, r.target, r.ok, r.ratio);
process.exit(0);
