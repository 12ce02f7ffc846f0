/**
 * A main-port request handed to a twin that lives in a shard's worker: over HTTP on the loopback to the twin's own
 * port, streamed both ways (method, headers, body, status kept), and WebSocket upgrades piped socket to socket.
 * The twin's URL and PREFIX_HEADER are set by the caller (src/classroom/main-port.ts).
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { RobotError } from '../core/errors.ts';
import { errorBody } from '../http/errors.ts';

/** Headers that belong to one connection, not to the request: each hop sets its own. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
];

export interface TwinAddress {
  readonly host: string;
  readonly port: number;
}

/** The address to reach a server listening on `host`: the loopback for a wildcard. */
export function loopbackFor(host: string): string {
  if (host === '' || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host.replace(/^\[(.*)\]$/, '$1');
}

export class Forwarder {
  /** Kept-alive connections to the twins' ports: a forwarded REST call costs no new TCP handshake. */
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

  /** Streams `req` to the twin at `to` and its answer back into `res`; a twin that does not answer is a 502. */
  forward(to: TwinAddress, req: IncomingMessage, res: ServerResponse): void {
    const out = http.request(
      {
        host: to.host,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: endToEnd(req.headers),
        agent: this.#agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    out.on('error', (err) => {
      if (res.headersSent) return void res.destroy();
      const { body } = errorBody(
        new RobotError(
          'unavailable',
          `the twin did not answer: ${err.message}`,
          'GET /twins/list.json says whether it is online',
        ),
      );
      res.writeHead(502, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    });
    // A client that goes away mid-answer (a closed page) ends the twin's side too.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  }

  /** Opens the same upgrade on the twin's port and pipes the two sockets together once it is accepted. */
  upgrade(to: TwinAddress, req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const out = http.request({
      host: to.host,
      port: to.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent: false,
    });
    socket.on('error', () => out.destroy());
    socket.once('close', () => out.destroy());
    out.on('error', () => socket.destroy());
    out.on('upgrade', (answer, twinSocket, twinHead) => {
      socket.write(statusLine(answer) + rawHeaders(answer.rawHeaders) + '\r\n');
      if (twinHead.length) socket.write(twinHead);
      twinSocket.on('error', () => socket.destroy());
      twinSocket.pipe(socket).on('close', () => twinSocket.destroy());
      socket.pipe(twinSocket).on('close', () => socket.destroy());
      socket.on('close', () => twinSocket.destroy());
      twinSocket.on('close', () => socket.destroy());
    });
    // The twin refused the upgrade: its answer goes back as it is, then the connection ends.
    out.on('response', (answer) => {
      socket.write(statusLine(answer) + rawHeaders(answer.rawHeaders) + '\r\n');
      answer.pipe(socket);
    });
    if (head.length) out.write(head);
    out.end();
  }

  /** Ends the kept-alive connections; requests in flight answer 502. */
  close(): void {
    this.#agent.destroy();
  }
}

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const kept = { ...headers };
  for (const h of HOP_BY_HOP) delete kept[h];
  return kept;
}

function statusLine(answer: IncomingMessage): string {
  return `HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}\r\n`;
}

function rawHeaders(raw: string[]): string {
  let text = '';
  for (let i = 0; i + 1 < raw.length; i += 2) text += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return text;
}
