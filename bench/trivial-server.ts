/**
 * The framework's ceiling on this machine: a fastify server with one trivial JSON route and no hooks, in its own
 * process like the robot server. `npm run bench` compares the robot server's routes against it.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/trivial.json', () => ({ present_position: 12.3 }));
await app.listen({ port: 0, host: '127.0.0.1' });
const addr = app.server.address();
console.log(`listening on http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/ (trivial)`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
