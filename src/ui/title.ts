/**
 * The web view's heading and tab title, shared by the server (which serves the page with them) and the browser code.
 * A classroom twin is named in both, so that thirty tabs of twins can be told apart.
 */
import type { RobotDescription } from './protocol.ts';

export interface ViewTitle {
  /** The page's heading: "Poppy ergo-jr (twin)", "ana: Poppy ergo-jr (twin)". */
  readonly heading: string;
  /** The browser tab's title: "Poppy ergo-jr", "ana (Poppy ergo-jr)". */
  readonly tab: string;
}

export function viewTitle(d: Pick<RobotDescription, 'robot' | 'backend' | 'name'>): ViewTitle {
  const robot = `Poppy ${d.robot}`;
  const kind = d.backend === 'sim' ? 'twin' : 'real robot';
  return d.name
    ? { heading: `${d.name}: ${robot} (${kind})`, tab: `${d.name} (${robot})` }
    : { heading: `${robot} (${kind})`, tab: robot };
}
