/**
 * The command line's say on who may call (docs/security.md): `--cors-origins`, `--allowed-hosts`, `--token` or
 * POPPY_TWIN_TOKEN; a server reachable beyond the loopback (or a classroom) without a token gets a generated one.
 */
import os from 'node:os';
import { ConfigError } from '../core/errors.ts';
import { type AccessOptions, isLoopback, newToken, parseOrigins, tokenProblem } from './access.ts';

export interface EdgeFlags {
  readonly access: AccessOptions;
  /** The token clients must send (a classroom: the teacher's), when one is needed. */
  readonly token: string | undefined;
  /** The token was generated here: print it once, with the URL carrying it. */
  readonly generated: boolean;
}

export function edgeFlags(
  flags: { host: string; corsOrigins: string; allowedHosts: string; token?: string },
  envToken: string | undefined,
  classroom: boolean,
): EdgeFlags {
  const given = flags.token ?? (envToken || undefined);
  if (given !== undefined) {
    const problem = tokenProblem(given);
    if (problem) throw new ConfigError(flags.token !== undefined ? '--token' : 'POPPY_TWIN_TOKEN', problem);
  }
  const beyond = !isLoopback(flags.host);
  const generated = given === undefined && (beyond || classroom);
  const token = given ?? (generated ? newToken() : undefined);
  const allowedHosts = flags.allowedHosts
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  for (const h of allowedHosts)
    if (!/^[A-Za-z0-9.:[\]_-]+$/.test(h))
      throw new ConfigError('--allowed-hosts', `"${h}" is not a host name or address`);
  return {
    access: { origins: parseOrigins(flags.corsOrigins), allowedHosts, tokens: token ? [token] : [] },
    token,
    generated,
  };
}

/** The host to print in a URL: the machine's name for a wildcard address (reachable from elsewhere), else as given. */
export function printedHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return os.hostname();
  return host.includes(':') ? `[${host}]` : host;
}
