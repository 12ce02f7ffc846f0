/** Types of scripts/build.js (plain JavaScript: it runs before anything is built). */
export declare const ROOT: string;
export declare const DIST: string;
export declare const ENTRIES: Record<string, string>;
export declare function staleness(): string | undefined;
export declare function build(): Promise<void>;
export declare function buildIfStale(): Promise<void>;
export declare function withLock<T>(fn: () => Promise<T>, lock?: string, staleMs?: number): Promise<T>;
