// Prisma's parameterization graph, laid out so that V8 keeps it small (used by build.mjs).
//
// The generated client carries the graph Prisma uses to find a query's parameters: a table of
// strings (field and argument names, operation names) and nodes whose edges are keyed by an index
// into that table. Prisma's runtime reads it once, into one plain object per node, `edges[index]`.
// V8 stores integer keys of a plain object as an array as long as the highest key, holes
// included, as long as no key lies 1024 or more beyond the array's end: with about 1,100
// strings, most of the 3,400 nodes of Dossier's schema held an array of several hundred slots
// for their handful of edges — 18 MB of heap for the server's life, of which 3 MB are the edges.
// Every string index here is moved up by OFFSET (the table keeps holes below it), so the first
// edge a node receives lies too far beyond its empty array and V8 keeps the node's edges in a
// hash table (a node would need about 340 edges for V8 to turn it back into an array).
//
// The graph's encoding (the runtime's deserializer, @prisma/client/runtime): base64url of
// varint inputNodeCount, outputNodeCount, rootCount; each input node: varint edgeCount, then per
// edge varint key, uint16 LE scalarMask, opt childNodeId, opt enumNameIndex, uint8 flags; each
// output node: varint edgeCount, then per edge varint key, opt argsNodeId, opt outputNodeId; each
// root: varint nameIndex, opt argsNodeId, opt outputNodeId. An "opt" is a varint, 0 for none and
// value + 1 otherwise. Keys, enumNameIndex and nameIndex index the string table.

/** How far every string index moves: beyond V8's gap of 1024 with room to spare. */
export const OFFSET = 4096;

/** The graph as plain data; throws when the bytes do not decode to exactly the expected layout. */
export function decodeGraph(graph) {
  const bytes = Buffer.from(graph, "base64url");
  let at = 0;
  const byte = () => {
    if (at >= bytes.length) throw new Error("parameterization graph: unexpected end");
    return bytes[at++];
  };
  const varint = () => {
    let value = 0;
    let shift = 0;
    let b;
    do {
      b = byte();
      value += (b & 127) * 2 ** shift;
      shift += 7;
    } while (b >= 128);
    return value;
  };
  const opt = () => {
    const v = varint();
    return v === 0 ? undefined : v - 1;
  };
  const inputCount = varint();
  const outputCount = varint();
  const rootCount = varint();
  const inputNodes = [];
  for (let n = 0; n < inputCount; n += 1) {
    const edges = [];
    for (let e = varint(); e > 0; e -= 1) {
      const key = varint();
      const scalarMask = byte() | (byte() << 8);
      edges.push({ key, scalarMask, childNodeId: opt(), enumNameIndex: opt(), flags: byte() });
    }
    inputNodes.push(edges);
  }
  const outputNodes = [];
  for (let n = 0; n < outputCount; n += 1) {
    const edges = [];
    for (let e = varint(); e > 0; e -= 1) edges.push({ key: varint(), argsNodeId: opt(), outputNodeId: opt() });
    outputNodes.push(edges);
  }
  const roots = [];
  for (let n = 0; n < rootCount; n += 1) roots.push({ nameIndex: varint(), argsNodeId: opt(), outputNodeId: opt() });
  if (at !== bytes.length) throw new Error(`parameterization graph: ${bytes.length - at} bytes left after decoding`);
  return { inputNodes, outputNodes, roots };
}

/** The base64url text of a decoded graph. */
export function encodeGraph({ inputNodes, outputNodes, roots }) {
  const out = [];
  const varint = (value) => {
    let v = value;
    while (v >= 128) {
      out.push((v % 128) | 128);
      v = Math.floor(v / 128);
    }
    out.push(v);
  };
  const opt = (value) => varint(value === undefined ? 0 : value + 1);
  varint(inputNodes.length);
  varint(outputNodes.length);
  varint(roots.length);
  for (const edges of inputNodes) {
    varint(edges.length);
    for (const edge of edges) {
      varint(edge.key);
      out.push(edge.scalarMask & 255, edge.scalarMask >> 8);
      opt(edge.childNodeId);
      opt(edge.enumNameIndex);
      out.push(edge.flags);
    }
  }
  for (const edges of outputNodes) {
    varint(edges.length);
    for (const edge of edges) {
      varint(edge.key);
      opt(edge.argsNodeId);
      opt(edge.outputNodeId);
    }
  }
  for (const root of roots) {
    varint(root.nameIndex);
    opt(root.argsNodeId);
    opt(root.outputNodeId);
  }
  return Buffer.from(out).toString("base64url");
}

/** The graph with every string index moved up by `offset` (the string table moves with it). */
export function shiftGraph(graph, offset) {
  const { inputNodes, outputNodes, roots } = decodeGraph(graph);
  const up = (index) => (index === undefined ? undefined : index + offset);
  const shifted = encodeGraph({
    inputNodes: inputNodes.map((edges) => edges.map((edge) => ({ ...edge, key: edge.key + offset, enumNameIndex: up(edge.enumNameIndex) }))),
    outputNodes: outputNodes.map((edges) => edges.map((edge) => ({ ...edge, key: edge.key + offset }))),
    roots: roots.map((root) => ({ ...root, nameIndex: root.nameIndex + offset })),
  });
  // The text must say the same graph, only moved: anything else (a new layout) keeps Prisma's own.
  const back = decodeGraph(shifted);
  const down = (index) => (index === undefined ? undefined : index - offset);
  const same =
    JSON.stringify({
      inputNodes: back.inputNodes.map((edges) => edges.map((edge) => ({ ...edge, key: edge.key - offset, enumNameIndex: down(edge.enumNameIndex) }))),
      outputNodes: back.outputNodes.map((edges) => edges.map((edge) => ({ ...edge, key: edge.key - offset }))),
      roots: back.roots.map((root) => ({ ...root, nameIndex: root.nameIndex - offset })),
    }) === JSON.stringify({ inputNodes, outputNodes, roots });
  if (!same) throw new Error("parameterization graph: moved graph does not decode to the original");
  return shifted;
}

/**
 * Rewrites the `config.parameterizationSchema = { strings: JSON.parse("…"), graph: "…" }` of the
 * generated client's internal/class.ts; returns the text unchanged (and a reason) when its shape
 * or the graph's layout is not the one known here, so a Prisma upgrade cannot break the client.
 */
export function spreadParameterizationSchema(source, offset = OFFSET) {
  const pattern = /config\.parameterizationSchema = \{\s*strings: (JSON\.parse\((?:"(?:[^"\\]|\\.)*")\)),\s*graph: "([A-Za-z0-9_-]*)"\s*\}/;
  const match = source.match(pattern);
  if (!match) return { source, skipped: "no parameterizationSchema of the known shape" };
  let graph;
  try {
    graph = shiftGraph(match[2], offset);
  } catch (error) {
    return { source, skipped: error.message };
  }
  // A table whose first entry is at `offset`: the holes below it cost a few kB at most, and its
  // length, which Prisma's runtime iterates once at start, is offset + entries.
  const strings = `((table) => { const spread = []; for (let i = table.length - 1; i >= 0; i -= 1) spread[${offset} + i] = table[i]; return spread; })(${match[1]})`;
  const replaced = `config.parameterizationSchema = {\n  strings: ${strings},\n  graph: ${JSON.stringify(graph)}\n}`;
  return { source: source.replace(match[0], () => replaced) };
}
