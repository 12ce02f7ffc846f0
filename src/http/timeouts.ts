/** HTTP connection timeouts: here, apart from the app, so the command line reads the defaults without loading it. */

/** How long a client may take (ms): to send its headers, its whole request, and to stay idle between requests. */
export interface HttpTimeouts {
  readonly headers: number;
  readonly request: number;
  readonly idle: number;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { headers: 10_000, request: 30_000, idle: 5_000 };
