/**
 * `npx tsx bench/serialize.ts`: does serialising answers from their schemas (fast-json-stringify, fastify's
 * schema-driven serializer) beat JSON.stringify on this server's answers? Issue 14 asks for it "where that is
 * faster". Measured on real answers of a live Humanoid twin (25 motors, the largest): one register, a register of
 * every motor, the motor list, and /robot.json's motors as objects (the route itself writes its text directly,
 * src/http/robot-answer.ts). Each serializer runs the same answers in alternating rounds; the best round counts.
 */
import fastJson from 'fast-json-stringify';
import { createRobotServer } from '../src/server.ts';
import { motorSnapshot } from '../src/robot/motor-registers.ts';

type Schema = Parameters<typeof fastJson>[0];

const number = { type: 'number' } as const;
const registerValue: Schema = { type: 'object', properties: { present_position: number } };
const registerList: Schema = {
  type: 'object',
  properties: { present_position: { type: 'object', additionalProperties: number } },
};
const motorList: Schema = {
  type: 'object',
  properties: { motors: { type: 'array', items: { type: 'string' } } },
};
const motorSnapshotSchema: Schema = {
  type: 'object',
  properties: { motors: { type: 'array', items: { type: 'object', additionalProperties: true } } },
};

function timeOf(fn: () => string, n: number): number {
  const t0 = process.hrtime.bigint();
  let bytes = 0;
  for (let i = 0; i < n; i++) bytes += fn().length;
  if (bytes < 0) throw new Error('unreachable');
  return Number(process.hrtime.bigint() - t0) / n;
}

const server = await createRobotServer({
  backend: 'sim',
  robot: 'humanoid',
  speed: 'manual',
  recordsDir: 'tmp/bench-records',
});
try {
  const motors = server.robot.motors;
  const cases: { name: string; schema: Schema; data: () => unknown }[] = [
    {
      name: 'one register value',
      schema: registerValue,
      data: () => ({ present_position: motors[0]!.state.presentPosition }),
    },
    {
      name: 'a register of 25 motors',
      schema: registerList,
      data: () => ({
        present_position: Object.fromEntries(motors.map((m) => [m.name, m.state.presentPosition])),
      }),
    },
    { name: 'the motor list', schema: motorList, data: () => ({ motors: motors.map((m) => m.name) }) },
    {
      name: "/robot.json's motors (objects)",
      schema: motorSnapshotSchema,
      data: () => ({ motors: motors.map((m) => motorSnapshot(m)) }),
    },
  ];
  console.log('answer                             JSON.stringify   fast-json-stringify   ratio (fjs / JSON)');
  for (const c of cases) {
    const compiled = fastJson(c.schema);
    const sample = c.data();
    if (JSON.stringify(JSON.parse(compiled(sample))) !== JSON.stringify(sample))
      throw new Error(`${c.name}: the two serializers disagree`);
    const n = c.name.includes('robot') ? 20_000 : 200_000;
    const rounds = { json: [] as number[], fjs: [] as number[] };
    for (let r = 0; r < 5; r++) {
      rounds.json.push(timeOf(() => JSON.stringify(c.data()), n));
      rounds.fjs.push(timeOf(() => compiled(c.data()), n));
    }
    const json = Math.min(...rounds.json);
    const fjs = Math.min(...rounds.fjs);
    console.log(
      `${c.name.padEnd(34)} ${`${json.toFixed(0)} ns`.padStart(14)}   ${`${fjs.toFixed(0)} ns`.padStart(19)}   ${(fjs / json).toFixed(2)}`,
    );
  }
} finally {
  await server.close();
}
process.exit(0);
