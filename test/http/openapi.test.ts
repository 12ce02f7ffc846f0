/**
 * The OpenAPI document (GET /openapi.json) is valid OpenAPI 3.1, documents every served route and serves every
 * documented one, marks the sim-only and beyond-v4 routes, describes the error body; its examples fit the
 * schemas; the reference page (/docs) renders in a browser with no network beyond this server.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
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
