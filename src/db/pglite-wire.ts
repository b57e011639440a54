// The embedded database's replies to Dossier's prepared statements (pglite-statements.ts), read
// straight from the bytes PGlite hands back. PGlite's own reader copies every column value into an
// ArrayBuffer of its own before decoding it and builds an object for every message: on a
// workspace read (a few hundred values) that was a tenth of the server's CPU and much of its
// garbage. Only what a statement's result needs is read here; a reply carrying an error is read
// by PGlite's own reader, so that the error is PGlite's, with every field it reports.
import { type PGlite, protocol } from "@electric-sql/pglite";

/** What a statement answered: its parameters' types (a Describe of a statement), its columns, its rows' values as text, its command tags. */
export type Reply = {
  parameterTypes: number[];
  fields: { name: string; dataTypeID: number }[];
  rows: (string | null)[][];
  commandTags: string[];
};

const ROW_DESCRIPTION = 0x54; // T
const DATA_ROW = 0x44; // D
const COMMAND_COMPLETE = 0x43; // C
const PARAMETER_DESCRIPTION = 0x74; // t
const ERROR_RESPONSE = 0x45; // E

const decoder = new TextDecoder();

/** Sends `message` (a sequence of protocol messages ending with Sync) and reads the reply; throws PGlite's DatabaseError on an error. The caller holds the connection. */
export async function exchange(pglite: PGlite, message: Uint8Array): Promise<Reply> {
  const received = new Received();
  await pglite.execProtocolRawStream(message, { syncToFs: false, onRawData: (chunk) => received.add(chunk) });
  return read(received.bytes());
}

/** The reply's bytes: PGlite hands them over in chunks of its WebAssembly memory, valid only during the call. */
class Received {
  private buffer = new Uint8Array(4096);
  private length = 0;

  add(chunk: Uint8Array): void {
    if (this.length + chunk.length > this.buffer.length) {
      const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + chunk.length));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
    this.buffer.set(chunk, this.length);
    this.length += chunk.length;
  }

  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
}

function read(bytes: Uint8Array): Reply {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const reply: Reply = { parameterTypes: [], fields: [], rows: [], commandTags: [] };
  const cstring = (at: number): [string, number] => {
    const end = bytes.indexOf(0, at);
    return [decoder.decode(bytes.subarray(at, end)), end + 1];
  };
  let offset = 0;
  while (offset + 5 <= bytes.length) {
    const type = bytes[offset]!;
    const end = offset + 1 + view.getInt32(offset + 1);
    let at = offset + 5;
    if (type === DATA_ROW) {
      const count = view.getInt16(at);
      at += 2;
      const row: (string | null)[] = new Array(count);
      for (let column = 0; column < count; column++) {
        const length = view.getInt32(at);
        at += 4;
        if (length < 0) row[column] = null;
        else {
          row[column] = decoder.decode(bytes.subarray(at, at + length));
          at += length;
        }
      }
      reply.rows.push(row);
    } else if (type === ROW_DESCRIPTION) {
      const count = view.getInt16(at);
      at += 2;
      reply.fields = [];
      for (let column = 0; column < count; column++) {
        const [name, next] = cstring(at);
        // table OID (4), column number (2), then the type's OID; its size, modifier and format follow (8).
        reply.fields.push({ name, dataTypeID: view.getInt32(next + 6) });
        at = next + 18;
      }
    } else if (type === COMMAND_COMPLETE) {
      reply.commandTags.push(cstring(at)[0]);
    } else if (type === PARAMETER_DESCRIPTION) {
      const count = view.getInt16(at);
      for (let index = 0; index < count; index++) reply.parameterTypes.push(view.getInt32(at + 2 + index * 4));
    } else if (type === ERROR_RESPONSE) {
      throw databaseError(bytes);
    }
    offset = end;
  }
  return reply;
}

/** The error PGlite's own reader makes of `bytes`. */
function databaseError(bytes: Uint8Array): Error {
  let error: Error | undefined;
  new protocol.Parser().parse(bytes.slice(), (message) => {
    if (!error && message instanceof protocol.messages.DatabaseError) error = message;
  });
  return error ?? new Error("the embedded database answered with an error it could not read");
}
