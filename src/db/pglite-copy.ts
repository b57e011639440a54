// A copy of an embedded database's data folder, read once from an uncompressed tar file and
// written into each new embedded database that starts from it (tests start every database so).
// PGlite's own `loadDataDir` reads a Blob as a stream into one buffer, checks and copies every
// entry out of it, then creates each file through the whole path lookup, about 190 ms of CPU for
// a migrated folder (43 MB, 1,276 entries) each time. Here the tar is parsed once per process and
// each new database's files read its bytes, each file getting a buffer of its own once written.
// CPU per PGlite.create, medians of 8, interleaved in one process on a busy 2-core machine: from
// PGlite's Blob 419 ms, from this copy 237 ms; a test database opened and migrated (applying
// nothing, the copy marked analysed; medians of 7) 585 ms before, 252 ms now, its migrate 107 ms
// then 10 ms.
// Copying a file only once written, rather than every file at start: 223 ms then 182 ms of CPU per
// PGlite.create followed by a write and a CHECKPOINT (medians of 10, interleaved).
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { MemoryFS } from "@electric-sql/pglite";

/**
 * A data folder: its folders (parents first) and files, each path relative to the folder.
 * `analysed`: its database was analysed after its last write (ANALYZE), so a database started from
 * it has current planner statistics and need not analyse before its first write.
 */
export type DataDirCopy = { folders: readonly string[]; files: readonly { path: string; data: Uint8Array }[]; analysed?: boolean };

/** Where PGlite keeps an in-memory database's data folder in its file system. */
const PGLITE_DATA = "/pglite/data";

const BLOCK = 512;

/** A NUL-terminated field of a tar header. */
function field(tar: Uint8Array, at: number, length: number): string {
  const bytes = tar.subarray(at, at + length);
  const end = bytes.indexOf(0);
  return Buffer.from(end < 0 ? bytes : bytes.subarray(0, end)).toString("utf8");
}

/**
 * Reads an uncompressed tar file (ustar, as PGlite's dumpDataDir("none") writes): its folders and
 * regular files, which share `tar`'s memory. A header that fails its checksum is an error; the
 * archive ends at its first empty header.
 */
export function readDataDirCopy(tar: Uint8Array, { analysed = false }: { analysed?: boolean } = {}): DataDirCopy {
  const folders: string[] = [];
  const files: { path: string; data: Uint8Array }[] = [];
  for (let at = 0; at + BLOCK <= tar.length; ) {
    // The archive ends with empty headers: no name.
    if (tar[at] === 0) break;
    let sum = 8 * 32;
    for (let i = at; i < at + 148; i += 1) sum += tar[i]!;
    for (let i = at + 156; i < at + BLOCK; i += 1) sum += tar[i]!;
    if (sum !== parseInt(field(tar, at + 148, 8).trim(), 8)) throw new Error(`not a tar file: bad header at byte ${at}`);
    const prefix = field(tar, at + 345, 155);
    const name = path.posix.normalize(`${prefix ? `${prefix}/` : ""}${field(tar, at + 0, 100)}`).replace(/^\/+|\/+$/g, "");
    const size = parseInt(field(tar, at + 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(tar[at + 156]!);
    at += BLOCK;
    if ((type === "0" || type === "\0") && name) files.push({ path: name, data: new Uint8Array(tar.buffer, tar.byteOffset + at, size) });
    else if (type === "5" && name && name !== ".") folders.push(name);
    at += Math.ceil(size / BLOCK) * BLOCK;
  }
  // Every file's folder, listed or not, parents first.
  const all = new Set<string>();
  for (const name of [...folders, ...files.map((file) => path.posix.dirname(file.path))]) {
    for (let folder = name; folder !== "." && !all.has(folder); folder = path.posix.dirname(folder)) all.add(folder);
  }
  return { folders: [...all].sort((a, b) => a.split("/").length - b.split("/").length), files, analysed };
}

/**
 * An in-memory file system for PGlite that holds `copy` as its data folder before PostgreSQL
 * starts. Each node is made by Emscripten's in-memory file system directly under its folder's
 * node, rather than through a path lookup and an open file per entry (47 ms of CPU a copy that
 * way). A file reads the copy's bytes until it is first written to, then gets a buffer of its own:
 * most of a test's database is never written.
 */
export function memoryFsHolding(copy: DataDirCopy): MemoryFS {
  return new (class extends MemoryFS {
    override async initialSyncFs(): Promise<void> {
      await super.initialSyncFs();
      const fs = (this.pg as unknown as { Module: { FS: EmscriptenFs } }).Module.FS;
      fs.mkdirTree(PGLITE_DATA);
      const folders = new Map<string, MemNode>([[".", fs.lookupPath(PGLITE_DATA).node]]);
      const make = (at: string, mode: number) => {
        const parent = folders.get(path.posix.dirname(at));
        if (!parent) throw new Error(`no folder for ${at} in the data folder's copy`);
        return parent.node_ops.mknod(parent, path.posix.basename(at), mode, 0);
      };
      for (const folder of copy.folders) folders.set(folder, make(folder, DIRECTORY));
      let onWrite: CopyingOnWrite | undefined;
      for (const file of copy.files) {
        const node = make(file.path, REGULAR_FILE);
        onWrite ??= copyingOnWrite(node.stream_ops);
        onWrite.share(node, file.data);
      }
    }
  })();
}

type CopyingOnWrite = { share(node: MemNode, data: Uint8Array): void };

/**
 * Files that share their bytes with the copy until written: a shared file's stream operations
 * first give it a buffer of its own on a write (or a map, which may write back), then are
 * Emscripten's own again. Resizing a file (truncate) always makes it a new buffer.
 */
function copyingOnWrite(memfs: StreamOps): CopyingOnWrite {
  const shared = new WeakSet<MemNode>();
  const own = (node: MemNode) => {
    if (!shared.delete(node)) return;
    node.contents = Uint8Array.prototype.slice.call(node.contents as Uint8Array, 0, node.usedBytes);
    node.stream_ops = memfs;
  };
  const ops: StreamOps = {
    ...memfs,
    write: (stream, ...rest) => {
      own(stream.node);
      return memfs.write(stream, ...rest);
    },
    mmap: (stream, ...rest) => {
      own(stream.node);
      return memfs.mmap(stream, ...rest);
    },
  };
  return {
    share(node, data) {
      node.contents = data;
      node.usedBytes = data.byteLength;
      node.stream_ops = ops;
      shared.add(node);
    },
  };
}

/** The modes Emscripten gives what `mkdir` and `open(…, O_CREAT)` make: rwx for all. */
const DIRECTORY = 0o40777;
const REGULAR_FILE = 0o100666;

/** Writes `copy` into the folder `dir` (which must not hold a database yet). */
export function writeDataDirCopy(copy: DataDirCopy, dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const folder of copy.folders) mkdirSync(path.join(dir, folder), { recursive: true, mode: 0o700 });
  for (const file of copy.files) writeFileSync(path.join(dir, file.path), file.data, { mode: 0o600, flag: "wx" });
}

type MemNode = {
  contents: unknown;
  usedBytes?: number;
  node_ops: { mknod(parent: MemNode, name: string, mode: number, dev: number): MemNode };
  stream_ops: StreamOps;
};
type Stream = { node: MemNode };
type StreamOps = { write(stream: Stream, ...rest: unknown[]): number; mmap(stream: Stream, ...rest: unknown[]): unknown };
type EmscriptenFs = {
  mkdirTree(path: string): void;
  lookupPath(path: string): { node: MemNode };
};
