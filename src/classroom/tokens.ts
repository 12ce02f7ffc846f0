/**
 * The classroom's tokens for the teacher: each student's token and the URLs that open their twin, in a file only the
 * user who started the class may read (mode 0600), beside the twins' records.
 */
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../core/logger.ts';
import type { ClassListing } from './main-port.ts';
import type { TwinSpec } from './roster.ts';

export const TOKEN_FILE = 'classroom-tokens.json';

export interface TokenFileInput {
  /** The host as printed in URLs, and the main port. */
  readonly host: string;
  readonly port: number;
  readonly teacher: string;
  readonly twins: readonly { readonly name: string; readonly port: number; readonly token: string }[];
}

/** Writes `<dir>/classroom-tokens.json` (replacing it) and says where. */
export async function writeTokenFile(dir: string, input: TokenFileInput): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.resolve(dir, TOKEN_FILE);
  const base = `http://${input.host}:${input.port}`;
  const content = {
    teacher: { token: input.teacher, url: `${base}/?token=${input.teacher}` },
    twins: input.twins.map((t) => ({
      name: t.name,
      token: t.token,
      url: `${base}/twins/${t.name}/ui/?token=${t.token}`,
      own_port_url: `http://${input.host}:${t.port}/ui/?token=${t.token}`,
    })),
  };
  // Created 0600 (a file that existed keeps its mode, so it is set again): no other user reads the tokens.
  const handle = await open(file, 'w', 0o600);
  try {
    await handle.chmod(0o600);
    await handle.writeFile(JSON.stringify(content, null, 2) + '\n');
  } finally {
    await handle.close();
  }
  return file;
}

/**
 * Once the class listens: the start-up line, the token file, and the teacher's URL when their token was generated
 * (printed there once, never logged again).
 */
export async function announceClass(
  room: { readonly app: FastifyInstance; classList(): ClassListing | Promise<ClassListing> },
  o: {
    readonly host: string;
    readonly twins: readonly TwinSpec[];
    readonly workers: number;
    readonly startedMs: number;
    readonly recordsDir: string;
    readonly edge: { readonly token: string | undefined; readonly generated: boolean };
    readonly logger: Logger;
  },
): Promise<void> {
  const addr = room.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const listed = (await room.classList()).twins;
  const ports = listed.map((t) => t.port);
  const shards = o.workers <= 1 ? 'in the main thread' : `in ${o.workers} worker threads`;
  o.logger.info(
    `classroom of ${o.twins.length} twins ${shards} listening on http://${o.host}:${port}/ (twins on ports ` +
      `${Math.min(...ports)}-${Math.max(...ports)}; started in ${Math.round(o.startedMs)} ms)`,
  );
  const tokenOf = new Map(o.twins.map((t) => [t.name, t.token]));
  const file = await writeTokenFile(o.recordsDir, {
    host: o.host,
    port,
    teacher: o.edge.token ?? '',
    twins: listed.map((t) => ({ name: t.name, port: t.port, token: tokenOf.get(t.name) ?? '' })),
  });
  o.logger.info(`the students' tokens and URLs are in ${file} (readable by you alone)`);
  if (o.edge.generated) o.logger.info(`teacher: open http://${o.host}:${port}/?token=${o.edge.token}`);
}
