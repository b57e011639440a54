// A model request as a model-call span records it. Most of a request is the conversation log
// read back, and the log keeps it already: each message the request carries exactly as its log
// entry reads is recorded as a reference to that entry, and only what the log does not hold
// verbatim (the system prompt, a summary, a cleared or spilled result, a repair note, text shown
// with ␀) is recorded inline. A user message the request joined from several (a run's context and
// its question, a summary and what follows it) is recorded as its parts, each a reference or text.
// So a tool's result or a run's context is stored once however many later requests carry it, and
// `resolveRequest` gives back the messages that were sent, byte for byte.
import { z } from "zod";
import type { Message, Prisma } from "../../generated/prisma/client.js";
import { fromStored, fromStoredJson } from "../text/stored-text.js";
import { type JsonValue, jsonColumnReader, toolCallsOf } from "../json-columns.js";

type Db = Pick<Prisma.TransactionClient, "message">;

/** A tool call the model asked for; `arguments` is the JSON text the model produced. */
export type ChatToolCall = { id: string; name: string; arguments: string };
/** A message of a model request (the model port's ChatMessage). */
export type RequestMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; toolCalls?: ChatToolCall[] }
  | { role: "tool"; toolCallId: string; content: string };

/** A piece of a joined user message: a log entry's content, or text as it was sent. */
export type RecordedPart = { logMessage: string } | { text: string };
/** A user message joined from several: its content is its parts' contents, concatenated. */
export type JoinedMessage = { role: "user"; parts: RecordedPart[] };
/** A recorded message: a reference to the log entry it reads as, a joined user message, or the message itself. */
export type RecordedMessage = { logMessage: string } | JoinedMessage | RequestMessage;

/** What separates the texts of user messages joined into one. */
export const JOIN_SEPARATOR = "\n\n";

/**
 * One user message holding the given user messages' texts in order, for chat servers that reject
 * two user messages in a row. `recordRequest` records it as its parts.
 */
export function joinUserMessages(parts: readonly RequestMessage[]): RequestMessage {
  return { role: "user", content: parts.map((part) => part.content ?? "").join(JOIN_SEPARATOR) };
}

const chatToolCall = z.looseObject({ id: z.string(), name: z.string(), arguments: z.string() });
const recordedMessage = z.union([
  z.looseObject({ logMessage: z.string() }),
  z.looseObject({ role: z.literal("system"), content: z.string() }),
  z.looseObject({ role: z.literal("user"), parts: z.array(z.union([z.looseObject({ logMessage: z.string() }), z.looseObject({ text: z.string() })])) }),
  z.looseObject({ role: z.literal("user"), content: z.string() }),
  z.looseObject({ role: z.literal("assistant"), content: z.string().nullable(), toolCalls: z.array(chatToolCall).optional() }),
  z.looseObject({ role: z.literal("tool"), toolCallId: z.string(), content: z.string() }),
]);
const requestAttribute = jsonColumnReader("span.attributes", z.looseObject({ request: z.array(recordedMessage).optional() }));

/** The request a model-call span records, from its attributes as fromStoredJson decodes them; undefined for other spans. */
export function recordedRequestOf(attributes: JsonValue): RecordedMessage[] | undefined {
  return requestAttribute(attributes).request;
}

type LogEntry = Pick<Message, "role" | "content" | "toolCalls" | "toolCallId">;

/**
 * How a decoded log entry reads in a request, when it is shown as it is: the only rendering of
 * log entries, used by the runtime to build requests and here to resolve references. A spilled
 * result, a repair record and a summary are shown otherwise (or not at all): null.
 */
export function asRequestMessage(entry: LogEntry): RequestMessage | null {
  switch (entry.role) {
    case "USER":
    case "CONTEXT":
      return { role: "user", content: entry.content };
    case "ASSISTANT": {
      const toolCalls = toolCallsOf(entry.toolCalls) ?? [];
      return { role: "assistant", content: entry.content === "" ? null : entry.content, ...(toolCalls.length ? { toolCalls: toolCalls.map(inOrder) } : {}) };
    }
    case "TOOL":
      return { role: "tool", toolCallId: entry.toolCallId ?? "", content: entry.content };
    case "REPAIR":
    case "SUMMARY":
      return null;
    default: {
      const unknownRole: never = entry.role;
      throw new Error(`unknown message role ${String(unknownRole)}`);
    }
  }
}

const inOrder = (call: ChatToolCall): ChatToolCall => ({ id: call.id, name: call.name, arguments: call.arguments });

/**
 * The message with its keys in the order the runtime builds them. Stored JSON (PostgreSQL's
 * jsonb) keeps no key order; read back in this order, a request serialises as it did when sent.
 */
function inBuiltOrder(message: RequestMessage): RequestMessage {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant":
      return { role: "assistant", content: message.content, ...(message.toolCalls ? { toolCalls: message.toolCalls.map(inOrder) } : {}) };
    case "tool":
      return { role: "tool", toolCallId: message.toolCallId, content: message.content };
  }
}

/**
 * `sources` maps each message object that is its log entry's own rendering to that entry's id;
 * `joined` maps each message `joinUserMessages` made to the messages it joined.
 */
export function recordRequest(
  messages: readonly RequestMessage[],
  sources: ReadonlyMap<RequestMessage, string>,
  joined: ReadonlyMap<RequestMessage, readonly RequestMessage[]> = new Map(),
): RecordedMessage[] {
  return messages.map((message) => {
    const id = sources.get(message);
    if (id) return { logMessage: id };
    const parts = joined.get(message);
    return parts ? { role: "user", parts: recordParts(parts, sources) } : message;
  });
}

/** The joined message's pieces, the separators included, so that reading it back needs no rule of joining. */
function recordParts(parts: readonly RequestMessage[], sources: ReadonlyMap<RequestMessage, string>): RecordedPart[] {
  const recorded: RecordedPart[] = [];
  const text = (value: string) => {
    const last = recorded.at(-1);
    if (last && "text" in last) last.text += value;
    else recorded.push({ text: value });
  };
  parts.forEach((part, index) => {
    if (index > 0) text(JOIN_SEPARATOR);
    const id = sources.get(part);
    if (id) recorded.push({ logMessage: id });
    else text(part.content ?? "");
  });
  return recorded;
}

/** The messages of a recorded request, references read back from the log, each as it was sent. */
export async function resolveRequest(db: Db | LogLookup, recorded: readonly RecordedMessage[]): Promise<RequestMessage[]> {
  const lookup = typeof db === "function" ? db : readLogMessages(db);
  const ids = recorded.flatMap((message) =>
    "logMessage" in message ? [message.logMessage] : "parts" in message ? message.parts.flatMap((part) => ("logMessage" in part ? [part.logMessage] : [])) : [],
  );
  const byId = await lookup(ids);
  const entry = (id: string): RequestMessage => {
    const row = byId.get(id);
    const shown = row ? asRequestMessage({ ...row, content: fromStored(row.content), toolCalls: fromStoredJson(row.toolCalls) }) : null;
    if (!shown) throw new Error(`recorded request refers to log entry ${id}, which cannot be read`);
    return shown;
  };
  const partText = (part: RecordedPart): string => {
    if ("text" in part) return part.text;
    const shown = entry(part.logMessage);
    if (shown.role !== "user") throw new Error(`recorded request joins log entry ${part.logMessage}, which is not a user message`);
    return shown.content;
  };
  return recorded.map((message) => {
    if ("logMessage" in message) return entry(message.logMessage);
    if ("parts" in message) return { role: "user", content: message.parts.map(partText).join("") };
    return inBuiltOrder(message);
  });
}

export type LoggedMessage = Pick<Message, "id" | "role" | "content" | "toolCalls" | "toolCallId">;

/** Reads log entries by id (the GraphQL layer passes one that batches the spans of a request). */
export type LogLookup = (ids: string[]) => Promise<Map<string, LoggedMessage>>;

/** One query for the given log entries. */
export function readLogMessages(db: Db): LogLookup {
  return async (ids) => {
    const rows = ids.length
      ? await db.message.findMany({ where: { id: { in: ids } }, select: { id: true, role: true, content: true, toolCalls: true, toolCallId: true } })
      : [];
    return new Map(rows.map((row) => [row.id, row]));
  };
}
