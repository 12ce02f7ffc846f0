/** The REST API as the panels call it: JSON in, JSON out; an error answer becomes an ApiError with its tip. */

export class ApiError extends Error {
  constructor(
    message: string,
    readonly tip: string,
  ) {
    super(message);
  }
}

/**
 * Where this robot's API is: '' on its own port, `/twins/<name>` when a classroom serves it on its main port (the
 * server names it in the page's `poppy-base` meta tag).
 */
export const BASE = document.querySelector<HTMLMetaElement>('meta[name="poppy-base"]')?.content ?? '';

export async function api(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(BASE + path, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(
      `the robot did not answer (${(err as Error).message})`,
      'is the server still running?',
    );
  }
  const text = await res.text();
  let answer: unknown = text;
  try {
    answer = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  if (!res.ok) {
    const e = answer as { error?: unknown; tip?: unknown };
    throw new ApiError(
      typeof e?.error === 'string' ? e.error : `HTTP ${res.status}`,
      typeof e?.tip === 'string' ? e.tip : '',
    );
  }
  return answer;
}

/** Runs `action`; its error (or nothing, on success) is shown in `errorBox`, next to the control that caused it. */
export async function reported<T>(errorBox: HTMLElement, action: () => Promise<T>): Promise<T | undefined> {
  try {
    const result = await action();
    errorBox.textContent = '';
    return result;
  } catch (err) {
    const e = err as Error;
    errorBox.textContent = err instanceof ApiError && err.tip ? `${e.message} — ${err.tip}` : e.message;
    return undefined;
  }
}

/** document.createElement with attributes and children, to keep the panels short. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

export function button(
  text: string,
  onClick: () => void,
  attrs: Record<string, string> = {},
): HTMLButtonElement {
  const b = el('button', { type: 'button', ...attrs }, text);
  b.addEventListener('click', onClick);
  return b;
}

export function errorBox(attrs: Record<string, string> = {}): HTMLSpanElement {
  return el('span', { class: 'error', role: 'alert', ...attrs });
}
