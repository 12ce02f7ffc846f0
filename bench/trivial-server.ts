/**
 * The framework's ceiling on this machine: a fastify server with one trivial JSON route and no hooks, in its own
 * process like the robot server. `npm run bench` compares the robot server's routes against it. With `post`, its one
 * route is a trivial POST instead, with `param` a GET of the register read's path (two parameters), each in a process
 * of its own: the GET's server stays the one-route server it was.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const kind = process.argv[2] ?? 'get';
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
