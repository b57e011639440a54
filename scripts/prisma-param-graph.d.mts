/** How far every string index of Prisma's parameterization graph moves (see prisma-param-graph.mjs). */
export declare const OFFSET: number;
type InputEdge = { key: number; scalarMask: number; childNodeId?: number; enumNameIndex?: number; flags: number };
type OutputEdge = { key: number; argsNodeId?: number; outputNodeId?: number };
type Root = { nameIndex: number; argsNodeId?: number; outputNodeId?: number };
export type DecodedGraph = { inputNodes: InputEdge[][]; outputNodes: OutputEdge[][]; roots: Root[] };
/** The graph as plain data; throws when the bytes do not decode to exactly the expected layout. */
export declare function decodeGraph(graph: string): DecodedGraph;
/** The base64url text of a decoded graph. */
export declare function encodeGraph(graph: DecodedGraph): string;
/** The graph with every string index moved up by `offset`. */
export declare function shiftGraph(graph: string, offset: number): string;
/** The generated client's class.ts with its parameterization schema moved, or unchanged with the reason. */
export declare function spreadParameterizationSchema(source: string, offset?: number): { source: string; skipped?: string };
