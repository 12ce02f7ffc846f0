/** Types of scripts/node-floor.js (plain JavaScript: it runs on any Node, to say it is too old). */
export declare const NODE_FLOOR: string;
export declare function nodeFloorMessage(
  version: string,
  floor?: string,
  execPath?: string,
): string | undefined;
export declare function exitIfNodeTooOld(): void;
