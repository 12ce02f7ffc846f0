/**
 * The OpenAPI document (GET /openapi.json) is valid OpenAPI 3.1, documents every served route and serves every
 * documented one, marks the sim-only and beyond-v4 routes, describes the error body; its examples fit the
 * schemas; the reference page (/docs) renders in a browser with no network beyond this server. The answers of the GET
 * routes, read on a live twin of each robot, fit the schemas the document gives them: a schema that lies fails.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
// Ajv ships with fastify (its validator and serializer compilers use it): the JSON Schema 2020-12 flavour.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import { chromium } from 'playwright-core';
import { simServer, type TestServer } from '../helpers.ts';

type Operation = {
  summary?: string;
  tags?: string[];
  'x-sim-only'?: boolean;
  'x-beyond-v4'?: boolean;
  requestBody?: { content: Record<string, { schema: unknown; example?: unknown }> };
  responses: Record<
    string,
    { content?: Record<string, { schema: Record<string, unknown>; example?: unknown }> }
  >;
};
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

/** The router's tree (printRoutes) as [full path, methods] rows. */
function routerTable(tree: string): [string, string[]][] {
  const rows: [string, string[]][] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (.*?)(?: \((.*)\))?$/.exec(line);
    if (!m) continue;
    stack.length = m[1]!.length / 4;
    stack.push(m[2]!);
    if (m[3]) rows.push([stack.join(''), m[3].split(', ')]);
  }
  return rows;
}

/** The routes this server adds to REST API 4.0.0 outside /sim/ (docs/api.md lists them). */
const BEYOND_V4 = new Set([
  '/openapi.json',
  '/metrics',
  '/shadow/status.json',
  '/shadow/events.json',
  '/calibration.json',
  '/calibration/run.json',
  '/calibration/run/stop.json',
  '/healthz',
  '/readyz',
  '/ui',
  '/primitives/problems.json',
  '/primitives/{primitive}/status.json',
  '/records/problems.json',
  '/records/{move}/upload.json',
]);

describe('OpenAPI document and reference page', function () {
  this.timeout(60000);
  for (const compat of [undefined, 'pypot'] as const) {
    describe(`${compat ?? 'default'} profile`, () => {
      let s: TestServer;
      let doc: Doc;
      before(async () => {
        s = await simServer('ergo-jr', compat ? { compat } : {});
        const res = await s.get('/openapi.json');
        expect(res.statusCode).to.equal(200);
        doc = JSON.parse(res.body) as Doc;
      });
      after(() => s.close());

      it('is a valid OpenAPI 3.1 document', async () => {
        expect(doc.openapi).to.equal('3.1.0');
        const result = await new Validator().validate(
          structuredClone(doc) as unknown as Parameters<Validator['validate']>[0],
        );
        expect(result.valid, JSON.stringify(result.errors, null, 1)?.slice(0, 2000)).to.equal(true);
      });

      it('documents every served route and serves every documented one', async () => {
        const documented = Object.entries(doc.paths).flatMap(([p, ops]) =>
          Object.keys(ops).map((m) => ({ method: m.toUpperCase(), url: p.replace(/\{(\w+)\}/g, ':$1') })),
        );
        for (const r of documented)
          expect(s.app.hasRoute(r as { method: 'GET'; url: string }), `${r.method} ${r.url}`).to.equal(true);
        // Served: the router's table, without the reference page's own files, CORS preflights and the catch-all
        // that answers 400 for move names with a "/".
        const served = routerTable(s.app.printRoutes({ commonPrefix: false })).filter(
          ([p]) => !p.startsWith('/docs') && !p.includes('*'),
        );
        for (const method of ['GET', 'POST']) {
          const count = served.filter(([, methods]) => methods.includes(method)).length;
          expect(documented.filter((r) => r.method === method).length, method).to.equal(count);
        }
        expect(
          served.flatMap(([, m]) => m).filter((m) => !['GET', 'POST', 'OPTIONS'].includes(m)),
        ).to.deep.equal([]);
      });

      it('every operation has a summary, a tag, the error body, and the sim-only and beyond-v4 marks', () => {
        for (const [p, ops] of Object.entries(doc.paths))
          for (const [m, op] of Object.entries(ops)) {
            const what = `${m} ${p}`;
            expect(op.summary, what).to.be.a('string').and.not.equal('');
            expect(op.tags, what).to.have.lengthOf(1);
            const err = op.responses['4XX']?.content?.['application/json']?.schema;
            expect(err?.required, what).to.have.members(['error', 'tip', 'details']);
            expect(op['x-sim-only'], what).to.equal(p.startsWith('/sim/'));
            expect(op['x-beyond-v4'], what).to.equal(/^\/(sim|ui|stream)\//.test(p) || BEYOND_V4.has(p));
          }
        expect(doc.paths['/sim/status.json']?.get?.tags).to.deep.equal(['sim']);
      });

      it('documents the token (bearer header or cookie, optional) and leaves the probes open', () => {
        const d = doc as unknown as {
          components: { securitySchemes: Record<string, { type: string; scheme?: string; in?: string }> };
          security: Record<string, string[]>[];
          paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
        };
        expect(d.components.securitySchemes.bearer).to.include({ type: 'http', scheme: 'bearer' });
        expect(d.components.securitySchemes.cookie).to.include({ type: 'apiKey', in: 'cookie' });
        expect(d.security).to.deep.include({});
        expect(d.paths['/healthz']?.get?.security).to.deep.equal([]);
        expect(d.paths['/motors/list.json']?.get?.security).to.equal(undefined);
        expect(d.paths['/motors/list.json']?.get?.responses).to.have.keys('200', '401', '403', '4XX', '5XX');
      });

      it('documents each body with its lenient types and an example', () => {
        const goto = doc.paths['/motors/{motor}/goto.json']!.post!;
        const body = goto.requestBody!.content['application/json']!;
        const props = (body.schema as { properties: Record<string, { anyOf?: { type: string }[] }> })
          .properties;
        expect(props.position!.anyOf!.map((t) => t.type)).to.deep.equal(['number', 'string']);
        expect(body.example).to.deep.equal({ position: 30, duration: 1.5, wait: true });
        const record = doc.paths['/records/{move}/record.json']!.post!.requestBody as { required?: boolean };
        expect(record.required, 'record.json works without a body').to.equal(false);
        expect((goto.requestBody as { required?: boolean }).required).to.equal(true);
        const status = compat ? '202' : '200';
        expect(goto.responses[status], `answer under ${status}`).to.have.property('content');
      });
    });
  }

  it('the reference page /docs renders every endpoint in a browser, offline', async () => {
    const s = await simServer('ergo-jr');
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    try {
      await s.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = s.app.server.address() as { port: number };
      const base = `http://127.0.0.1:${port}`;
      const page = await browser.newPage();
      const outside: string[] = [];
      await page.route('**/*', (route) => {
        if (route.request().url().startsWith(base)) return route.continue();
        outside.push(route.request().url());
        return route.abort();
      });
      await page.goto(`${base}/docs`);
      await page.waitForSelector('.opblock', { timeout: 20000 });
      const operations = await page.locator('.opblock').count();
      const doc = JSON.parse((await s.get('/openapi.json')).body) as Doc;
      const documented = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
      expect(operations).to.equal(documented);
      expect(outside).to.deep.equal([]);
    } finally {
      await browser.close();
      await s.close();
    }
  });
});

/** Every GET with a JSON answer, its path parameters filled from what the server itself lists. */
async function liveGets(s: TestServer, doc: Doc): Promise<Map<string, string[]>> {
  const list = async (url: string, key: string) =>
    (JSON.parse((await s.get(url)).body) as Record<string, string[]>)[key]!;
  const motors = await list('/motors/list.json', 'motors');
  const aliases = await list('/motors/aliases/list.json', 'aliases');
  const primitives = await list('/primitives/list.json', 'primitives');
  const sensors = await list('/sensors/list.json', 'sensors');
  const chains = await list('/ui/robot.json', 'chains');
  const motor = [motors[0]!, motors.at(-1)!];
  const registers = new Map<string, string[]>();
  for (const m of motor) registers.set(m, await list(`/motors/${m}/registers/list.json`, 'registers'));
  const props = new Map<string, string[]>();
  for (const p of primitives) props.set(p, await list(`/primitives/${p}/properties/list.json`, 'property'));
  const sensorRegisters = new Map<string, string[]>();
  for (const sensor of sensors)
    sensorRegisters.set(sensor, await list(`/sensors/${sensor}/registers/list.json`, 'registers'));

  const urls = new Map<string, string[]>();
  for (const [p, ops] of Object.entries(doc.paths)) {
    const answer = ops.get?.responses['200']?.content?.['application/json'];
    // no JSON answer, or none at all (the WebSocket's path: a plain GET is a 400)
    if (!answer || 'not' in answer.schema) continue;
    // actions (a GET that starts or stops a primitive) are checked by their own tests
    if (/\/(start|stop|pause|resume)\.json$/.test(p)) continue;
    if (p.startsWith('/sensors/code/') && !sensors.includes('marker_detector')) continue;
    // a calibration run is 409 on the sim backend: test/calibration/route.test.ts checks its answers on the real one
    if (p.startsWith('/calibration/run')) continue;
    let filled: string[] = [p];
    const expand = (name: string, values: (url: string) => readonly string[]) => {
      filled = filled.flatMap((u) =>
        u.includes(`{${name}}`) ? values(u).map((v) => u.replace(`{${name}}`, v)) : [u],
      );
    };
    expand('primitive', () => primitives);
    expand('prop', (u) => props.get(u.split('/')[2]!) ?? []);
    expand('sensor', () => sensors);
    expand('motor', () => motor);
    expand('register', (u) =>
      u.startsWith('/sensors/')
        ? (sensorRegisters.get(u.split('/')[2]!) ?? [])
        : u.startsWith('/motors/registers/')
          ? (registers.get(motor[0]!) ?? [])
          : (registers.get(u.split('/')[2]!) ?? []),
    );
    expand('alias', () => aliases);
    expand('chain', () => chains);
    expand('move', () => ['live_check']);
    expand('code', () => ['tetris', 'caribou']);
    expect(filled.join(' '), 'every path parameter filled').to.not.contain('{');
    if (p === '/ik/{chain}/rpy.json') filled = filled.map((u) => `${u}?r=0.1&p=0.2&y=0.3`);
    urls.set(p, filled);
  }
  return urls;
}

describe('live answers fit their documented schemas', function () {
  this.timeout(120000);
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  for (const robot of ['ergo-jr', 'torso', 'humanoid']) {
    it(`${robot}: every GET with a JSON answer, on every motor register, primitive, property and sensor`, async () => {
      const s = await simServer(robot, { primitivesDir: 'examples/primitives' });
      try {
        const doc = JSON.parse((await s.get('/openapi.json')).body) as Doc;
        // Something to show: a recorded move, a card in front of the camera, a motion under way.
        await s.post('/records/live_check/record.json');
        await s.advance(0.1);
        await s.post('/records/live_check/save.json');
        if (doc.paths['/sim/cards/{name}/show.json']) await s.post('/sim/cards/tetris/show.json', {});
        await s.post('/sim/motors/compliant.json', { compliant: false });
        await s.advance(0.2);
        const urls = await liveGets(s, doc);
        expect(urls.size, 'routes checked').to.be.above(25);
        let checked = 0;
        for (const [p, list] of urls) {
          const schema = doc.paths[p]!.get!.responses['200']!.content!['application/json']!.schema;
          const valid = ajv.compile(schema);
          for (const url of list) {
            const res = await s.get(url);
            expect(res.statusCode, `${url}: ${res.body.slice(0, 300)}`).to.equal(200);
            const answer = JSON.parse(res.body) as unknown;
            expect(
              valid(answer),
              `${url} answers ${res.body.slice(0, 300)}: ${ajv.errorsText(valid.errors)}`,
            ).to.equal(true);
            checked++;
          }
        }
        expect(checked).to.be.above(urls.size);
        // The check can fail: an answer that differs from its schema is refused.
        const motorList = ajv.compile(
          doc.paths['/motors/list.json']!.get!.responses['200']!.content!['application/json']!.schema,
        );
        expect(motorList({ motors: [1] })).to.equal(false);
        const status = ajv.compile(
          doc.paths['/sim/status.json']!.get!.responses['200']!.content!['application/json']!.schema,
        );
        expect(status({ sim_time: 1 })).to.equal(false);
      } finally {
        await s.close();
      }
    });
  }
});

describe('the gotos answer as documented, waited or not, in both profiles', function () {
  this.timeout(60000);
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  for (const compat of [undefined, 'pypot'] as const) {
    it(`${compat ?? 'default'} profile: motor, multi-motor and IK gotos`, async () => {
      const s = await simServer('ergo-jr', compat ? { compat } : {});
      try {
        const doc = JSON.parse((await s.get('/openapi.json')).body) as Doc;
        await s.post('/sim/motors/compliant.json', { compliant: false });
        await s.advance(0.2);
        const gotos: [string, string, unknown][] = [
          ['/motors/{motor}/goto.json', '/motors/m1/goto.json', { position: 20, duration: 0.5 }],
          [
            '/motors/goto.json',
            '/motors/goto.json',
            { motors: ['m1', 'm4'], positions: [0, 10], duration: 0.5 },
          ],
          ['/ik/{chain}/goto.json', '/ik/chain/goto.json', { xyz: '0.05,-0.12,0.15', duration: 0.5 }],
        ];
        for (const [p, url, body] of gotos) {
          for (const wait of [false, true]) {
            const res = await s.untilAnswered(s.post(url, { ...(body as object), wait }), 5, 0.02);
            const status = String(res.statusCode);
            const schema = doc.paths[p]!.post!.responses[status]?.content?.['application/json']?.schema;
            expect(schema, `${url} ${status}`).to.not.equal(undefined);
            const valid = ajv.compile(schema!);
            const answer = JSON.parse(res.body) as Record<string, unknown>;
            expect(valid(answer), `${url} answers ${res.body}: ${ajv.errorsText(valid.errors)}`).to.equal(
              true,
            );
            // The default profile's waited answers say whether they arrived; pypot's never do.
            expect('reached' in answer, `${url} wait ${wait}: ${res.body}`).to.equal(wait && !compat);
            // The check can fail: a field the document does not list is refused.
            expect(valid({ ...answer, arrived: true })).to.equal(false);
          }
        }
      } finally {
        await s.close();
      }
    });
  }
});
