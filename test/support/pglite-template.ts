// Writes a migrated PGlite data directory (an uncompressed tar file, src/db/pglite-copy.ts reads
// it) to the file named by its first argument, and the same database before any migration (just
// initialised) to the second; run by database-templates.ts in a process of its own.
//   node --import tsx test/support/pglite-template.ts <migrated file> <empty file>
// Each is taken from a folder PGlite closed, so a copy starts as from a clean shutdown. A dump of
// a running database (dumpDataDir) started with crash recovery, whose end-of-recovery checkpoint
// wrote the 16 MB write-ahead log and the pages again: 193 ms of CPU per PGlite.create from the copy
// against 125 ms (medians of 10, interleaved in one process on a busy machine).
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { migrate } from "../../src/db/migrate.js";
import { pgliteSession } from "../../src/db/sql-session.js";

const [file, emptyFile] = process.argv.slice(2);
if (!file || !emptyFile) throw new Error("usage: pglite-template.ts <migrated file> <empty file>");
const dir = mkdtempSync(path.join(tmpdir(), "dossier-pglite-template-"));
try {
  // Initialised (initdb), then closed.
  await (await PGlite.create(dir)).close();
  writeTar(dir, emptyFile);
  const pglite = await PGlite.create(dir);
  try {
    await migrate(pgliteSession(pglite));
    await pglite.exec("ANALYZE");
  } finally {
    await pglite.close();
  }
  writeTar(dir, file);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** Writes the folder `from` as an uncompressed ustar file: its folders and regular files, paths relative to it. */
function writeTar(from: string, to: string): void {
  const out = openSync(to, "w");
  try {
    const visit = (relative: string) => {
      for (const name of readdirSync(path.join(from, relative)).sort()) {
        const entry = relative ? `${relative}/${name}` : name;
        const stat = statSync(path.join(from, entry));
        if (stat.isDirectory()) {
          writeSync(out, header(entry, 0, true));
          visit(entry);
        } else if (stat.isFile()) {
          const data = readFileSync(path.join(from, entry));
          writeSync(out, header(entry, data.byteLength, false));
          writeSync(out, data);
          writeSync(out, Buffer.alloc((512 - (data.byteLength % 512)) % 512));
        }
      }
    };
    visit("");
    writeSync(out, Buffer.alloc(1024));
  } finally {
    closeSync(out);
  }
}

function header(name: string, size: number, folder: boolean): Buffer {
  if (Buffer.byteLength(name) > 99) throw new Error(`path too long for a tar header: ${name}`);
  const block = Buffer.alloc(512);
  const octal = (value: number, at: number, length: number) => block.write(`${value.toString(8).padStart(length - 1, "0")}\0`, at, "ascii");
  block.write(name, 0, "utf8");
  octal(folder ? 0o700 : 0o600, 100, 8);
  octal(0, 108, 8);
  octal(0, 116, 8);
  octal(size, 124, 12);
  octal(Math.floor(Date.now() / 1000), 136, 12);
  block.write(folder ? "5" : "0", 156, "ascii");
  block.write("ustar\u000000", 257, "ascii");
  block.fill(" ", 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return block;
}
