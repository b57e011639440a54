// PGlite's PostgreSQL installation (its share and lib folders, 6.2 MB) lives in an in-memory file
// system, every file a view on one buffer read from pglite.data at start, which stays resident for
// the process's life. A running database reads few of those files: time zones, dictionaries,
// extensions and the libraries it loads on demand. The rest serves initdb (which runs in a child
// process, pglite-initdb.ts), PostgreSQL's build system, encodings Dossier never converts to and
// ICU's collation data.
// Once the database is open, those are removed and the kept files copied out of the shared buffer,
// which is then released.
import type { PGlite } from "@electric-sql/pglite";

/** Under PGlite's installation folder: what a running database never reads. */
const NOT_READ_AT_RUN_TIME = [
  // initdb's inputs: the catalog's bootstrap and the SQL it runs into a new cluster.
  /^\/pglite\/share\/postgresql\/[^/]+\.(bki|sql|sample|txt)$/,
  // PostgreSQL's build system, for compiling extensions.
  /^\/pglite\/lib\/postgresql\/pgxs\//,
  // Conversions between UTF-8 and other encodings (PGlite's client and server both speak UTF-8),
  // and streaming replication's client.
  /^\/pglite\/lib\/postgresql\/(utf8_and_[a-z0-9_]+|libpqwalreceiver)\.so$/,
  // ICU's collation data (0.9 MB), read only for a collation of the ICU provider: PGlite's
  // databases use the C locale of the libc provider, and Dossier's schema and queries name no
  // other collation.
  /^\/pglite\/icu\//,
];

/**
 * The database's own folder, not the installation's: in memory, its files may share their bytes
 * with the copy it started from until written (pglite-copy.ts), which must stay as it is.
 */
const DATA_FOLDER = "/pglite/data";

/** The part of Emscripten's MEMFS this reads: a file's contents are bytes, a folder's its entries. */
type MemNode = { name: string; mode: number; contents: Uint8Array | Record<string, MemNode> | null; usedBytes?: number };
type EmscriptenFs = {
  lookupPath(path: string): { node: MemNode };
  unlink(path: string): void;
  isDir(mode: number): boolean;
  isFile(mode: number): boolean;
};

export type Released = { removed: number; removedBytes: number; copiedBytes: number; releasedBytes: number };

/**
 * Removes the files of PGlite's installation a running database does not read, copies the others
 * out of the buffer they share, and releases that buffer. Returns what it did (all zero when this
 * PGlite keeps its files otherwise).
 */
export function releaseInstallationFiles(pglite: PGlite): Released {
  const released: Released = { removed: 0, removedBytes: 0, copiedBytes: 0, releasedBytes: 0 };
  const fs = (pglite as unknown as { mod?: { FS?: EmscriptenFs } }).mod?.FS;
  if (!fs) return released;
  let root: MemNode;
  try {
    root = fs.lookupPath("/").node;
  } catch {
    return released;
  }
  const shared = new Set<ArrayBufferLike>();
  const visit = (folder: MemNode, at: string) => {
    if (!folder.contents || folder.contents instanceof Uint8Array) return;
    for (const [name, node] of Object.entries(folder.contents)) {
      const file = `${at}/${name}`;
      if (fs.isDir(node.mode)) {
        if (file !== DATA_FOLDER) visit(node, file);
      } else if (fs.isFile(node.mode) && node.contents instanceof Uint8Array) {
        const bytes = node.contents;
        const view = bytes.byteOffset > 0 || bytes.byteLength < bytes.buffer.byteLength;
        if (NOT_READ_AT_RUN_TIME.some((pattern) => pattern.test(file))) {
          fs.unlink(file);
          released.removed += 1;
          released.removedBytes += node.usedBytes ?? bytes.byteLength;
        } else if (view) {
          node.contents = bytes.slice(0, node.usedBytes ?? bytes.byteLength);
          released.copiedBytes += node.contents.byteLength;
        }
        if (view) shared.add(bytes.buffer);
      }
    }
  };
  visit(root, "");
  // Every view on the buffer is gone or copied (a folder mounted on the file system, like the data
  // folder, is walked as the empty folder it is mounted on); PGlite's start-up code still holds
  // the buffer itself (it read it once), so it is detached: its memory goes back now.
  for (const buffer of shared) {
    if (!(buffer instanceof ArrayBuffer)) continue;
    released.releasedBytes += buffer.byteLength;
    structuredClone(buffer, { transfer: [buffer] });
  }
  return released;
}
