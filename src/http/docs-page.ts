/**
 * The browsable API reference at /docs: swagger-ui's own files, served from the @fastify/swagger-ui package's folder
 * (found through Node's resolution: the server may run bundled) and read on first request, with a page of ours that
 * points them at /openapi.json. No plugin at start: @fastify/swagger-ui and the @fastify/static it registers (a file
 * glob, 450 KB of code) cost every start for a page few open (issue 31).
 */
import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { notFound } from '../core/errors.ts';

/** swagger-ui's files; the package ships them, so the page works offline. */
const STATIC_DIR = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@fastify/swagger-ui/package.json')),
  'static',
);

const TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
};

/**
 * Relative links only, from a base of the page's own folder: it works wherever it is mounted (a classroom twin under
 * /twins/<name>/docs) and whether it is asked as /docs or /docs/ (the router takes both as one).
 */
const page = (base: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<base href="${base}">
<title>API reference</title>
<link rel="stylesheet" href="static/swagger-ui.css">
<link rel="stylesheet" href="static/index.css">
<link rel="icon" type="image/png" href="static/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui"></div>
<script src="static/swagger-ui-bundle.js"></script>
<script src="static/swagger-ui-standalone-preset.js"></script>
<script src="init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: new URL('../openapi.json', document.baseURI).href,
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  plugins: [SwaggerUIBundle.plugins.DownloadUrl],
  layout: 'StandaloneLayout',
});
`;

/** GET /docs (to /docs/), the page, its start script and swagger-ui's files; hidden from the OpenAPI document. */
export function registerDocsPage(app: FastifyInstance, docsPath: string): void {
  const files = new Map<string, Promise<Buffer>>();
  let names: Promise<Set<string>> | undefined;
  const hide = { schema: { hide: true } };
  const folder = `${path.posix.basename(docsPath)}/`;
  app.get(docsPath, hide, (req, reply) =>
    reply.type(TYPES['.html']!).send(page(req.url.split('?')[0]!.endsWith('/') ? './' : folder)),
  );
  app.get(`${docsPath}/init.js`, hide, (_req, reply) => reply.type(TYPES['.js']!).send(INIT));
  app.get<{ Params: { file: string } }>(`${docsPath}/static/:file`, hide, async (req, reply) => {
    const { file } = req.params;
    names ??= readdir(STATIC_DIR).then((list) => new Set(list));
    const type = TYPES[path.extname(file)];
    if (!(await names).has(file) || !type)
      throw notFound(`no file ${file} in the reference page`, `open ${docsPath}/`, 'unknown file');
    let bytes = files.get(file);
    if (!bytes) {
      bytes = readFile(path.join(STATIC_DIR, file));
      files.set(file, bytes);
    }
    return reply
      .type(type)
      .header('cache-control', 'public, max-age=3600')
      .send(await bytes);
  });
}
