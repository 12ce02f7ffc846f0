/** GET /: the HTML index of every GET and POST path, with links to the reference and the web view. */
import { type RouteSpec, displayPath } from './route.ts';

export function indexPage(
  title: string,
  routes: readonly Pick<RouteSpec, 'method' | 'path' | 'summary'>[],
  viewPath?: string,
): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const section = (method: 'GET' | 'POST') =>
    routes
      .filter((r) => r.method === method)
      .map((r) => `<li><code>${method} ${esc(displayPath(r.path))}</code> — ${esc(r.summary)}</li>`)
      .join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${esc(title)} — REST API 4.0.0</title></head>
<body><h1>${esc(title)}</h1><p>REST API 4.0.0. JSON in, JSON out. The reference with every body and answer:
<a href="/docs">/docs</a> (OpenAPI document: <a href="/openapi.json">/openapi.json</a>).</p>
${viewPath ? `<p><a href="${esc(viewPath)}">Open the robot in 3D, with its control panels</a></p>\n` : ''}<h2>GET</h2><ul>
${section('GET')}
</ul><h2>POST</h2><ul>
${section('POST')}
</ul></body></html>
`;
}
