/** The live state stream as the page reads it: one WebSocket, reconnected when it drops. */
import type { RobotState } from '../protocol.ts';
import { BASE } from './api.ts';

export interface LiveOptions {
  readonly rate: number;
  readonly onState: (state: RobotState) => void;
  readonly onStatus: (status: 'live' | 'down', detail: string) => void;
  readonly onError: (message: string) => void;
}

export class LiveState {
  #socket: WebSocket | undefined;
  #rate: number;
  readonly #opts: LiveOptions;

  constructor(opts: LiveOptions) {
    this.#opts = opts;
    this.#rate = opts.rate;
    this.#connect();
  }

  setRate(rate: number): void {
    this.#rate = rate;
    if (this.#socket?.readyState === WebSocket.OPEN) this.#socket.send(JSON.stringify({ rate }));
  }

  #connect(): void {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const socket = new WebSocket(`${scheme}://${location.host}${BASE}/stream/state?rate=${this.#rate}`);
    this.#socket = socket;
    socket.addEventListener('open', () => this.#opts.onStatus('live', `live at ${this.#rate} Hz`));
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { type: string; error?: string; tip?: string };
      if (message.type === 'state') this.#opts.onState(message as RobotState);
      else if (message.type === 'error') this.#opts.onError(`${message.error} — ${message.tip}`);
    });
    socket.addEventListener('close', (event) => {
      this.#opts.onStatus('down', event.reason ? `disconnected: ${event.reason}` : 'disconnected, retrying…');
      setTimeout(() => this.#connect(), 1000);
    });
  }
}
