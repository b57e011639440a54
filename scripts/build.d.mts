/** The entry points of Dossier's long-running processes, bundled into dist/ (see build.mjs). */
export declare const PROCESSES: string[];
/** Writes dist/<entry>.js (e.g. dist/src/main.js) for each entry, with a source map beside it. */
export declare function buildDossier(entries?: string[]): Promise<void>;
/** The Node.js flags Dossier's processes run with (see build.mjs). */
export declare const NODE_FLAGS: string[];
/** The environment they start with (see build.mjs). */
export declare const NODE_ENV: Record<string, string>;
/** The command line that runs a bundle as `npm start` does. */
export declare function nodeCommand(bundle: string): string;
/** The esbuild plugin that lays out Prisma's parameterization graph for V8 (see build.mjs). */
export declare const paramGraph: import("esbuild").Plugin;
