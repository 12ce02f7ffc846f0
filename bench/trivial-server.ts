/**
 * The framework's ceiling on this machine: a fastify server with one trivial JSON route and no hooks, in its own
 * process like the robot server. `npm run bench` compares the robot server's routes against it. With `post`, its one
 * route is a trivial POST instead, with `param` a GET of the register read's path (two parameters), each in a process
 * of its own: the GET's server stays the one-route server it was. With `node-post`, no framework at all: node's own
 * http server reading the goto's body and answering it, the floor of any POST on node.
 */
import { createServer } from 'node:http';
import Fastify from 'fastify';

const kind = process.argv[2] ?? 'get';
if (kind === 'node-post') {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        position: number;
        duration: number;
      };
      const text = JSON.stringify({
        motors: { head_z: body.position },
        duration: body.duration,
        waiting: false,
      });
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    });
  });
  server.keepAliveTimeout = 72_000;
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    console.log(
      `listening on http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/ (node's own POST)`,
    );
  });
  process.on('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
} else {
  const app = Fastify({ logger: false });
  if (kind === 'get') app.get('/trivial.json', () => ({ present_position: 12.3 }));
  // The framework's ceiling for the register read's route: find-my-way's two parameters, the answer keyed by one.
  else if (kind === 'param')
    app.get('/motors/:motor/registers/:register/value.json', (req) => {
      const { register } = req.params as { register: string };
      return { [register]: 12.3 };
    });
  // The framework's ceiling for a POST: fastify's own JSON body parsing, the goto's body in and its answer's shape out.
  else
    app.post('/trivial-goto.json', (req) => {
      const body = req.body as { position: number; duration: number };
      return { motors: { head_z: body.position }, duration: body.duration, waiting: false };
    });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  console.log(`listening on http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/ (trivial)`);
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}
