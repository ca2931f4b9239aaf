// JSON-RPC 2.0 messages as lossless JSON text: an integer beyond 2^53 arrives as a bigint and
// leaves as the same digits. Outgoing text is jsonText's (the wire's lossless writer, which keeps
// its own stack, so a result nested past the call stack is still sent), as `ptc run --json` prints
// it, so a run's result reads the same through both front ends.
import { parse as parseLossless, isInteger, isSafeNumber } from 'lossless-json';
import { jsonText } from '../index.ts';
import { LossyValueError } from '../../wire/json.ts';

export type Id = string | number | bigint | null;

/** The standard codes, and this server's own in the range JSON-RPC reserves for servers. */
export const ErrorCode = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** The owner already has a run in flight, or the runId is taken. */
  busy: -32001,
  /** `shutdown` was received; nothing new is started. */
  shuttingDown: -32002,
} as const;

/** An error to answer a request with: its JSON-RPC code, message and optional data. */
export class RpcError extends Error {
  override name = 'RpcError';
  readonly code: number;
  readonly data: unknown;
  /** The id of the request this error answers, when the line was readable that far. */
  id: Id = null;
  /** Set when the line was a response (it had no method), so it answers one of our requests and gets no reply itself. */
  response = false;
  constructor(code: number, message: string, data?: unknown, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.data = data;
  }
}

export type Incoming =
  | { kind: 'request'; id: Id; method: string; params: Record<string, unknown> }
  | { kind: 'notification'; method: string; params: Record<string, unknown> }
  | { kind: 'response'; id: Id; result?: unknown; error?: { code: number; message: string; data?: unknown } };

// Only a run of 16+ digits can be an integer beyond 2^53; without one the native parser is exact.
const LONG_DIGITS = /\d{16}/;

function parseNumber(text: string): number | bigint {
  return isInteger(text) && !isSafeNumber(text) ? BigInt(text) : Number(text);
}

/** Parses one line into a message; throws RpcError (with the id when one was readable) when it is not one. */
export function decodeMessage(line: string): Incoming {
  let message: unknown;
  try {
    message = LONG_DIGITS.test(line) ? parseLossless(line, null, parseNumber) : JSON.parse(line);
  } catch (error) {
    const unreadable = new RpcError(ErrorCode.parse, `parse error: ${(error as Error).message}`, undefined, { cause: error });
    // A reply that is not JSON still names the request it answers, more often than not: read
    // that much, so the call it answers fails now instead of at the run's deadline.
    const reply = replyId(line);
    if (reply !== undefined) Object.assign(unreadable, { id: reply, response: true });
    throw unreadable;
  }
  if (Array.isArray(message)) throw new RpcError(ErrorCode.invalidRequest, 'batches are not supported: send one message per line');
  if (typeof message !== 'object' || message === null) throw new RpcError(ErrorCode.invalidRequest, `a message must be a JSON object, got ${preview(line)}`);
  const object = message as Record<string, unknown>;
  const id = object.id;
  const hasId = 'id' in object;
  // A number too large for a double (1e400) parses as Infinity, which no reply could echo.
  if (hasId && !(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) || typeof id === 'bigint' || id === null)) {
    throw new RpcError(ErrorCode.invalidRequest, `id must be a string, a number or null, got ${preview(shown(id))}`);
  }
  const known = (id ?? null) as Id;
  const invalid = (code: number, text: string): RpcError => Object.assign(new RpcError(code, text), { id: known, response: !('method' in object) });
  if (object.jsonrpc !== '2.0') throw invalid(ErrorCode.invalidRequest, `jsonrpc must be "2.0", got ${object.jsonrpc === undefined ? 'nothing' : preview(shown(object.jsonrpc))}`);
  if (!('method' in object)) {
    if (!hasId || !('result' in object || 'error' in object)) throw invalid(ErrorCode.invalidRequest, 'a message needs a method (a request) or an id with result or error (a response)');
    const error = object.error as { code: number; message: string; data?: unknown } | undefined;
    if (error !== undefined && (typeof error !== 'object' || error === null || typeof error.message !== 'string')) {
      return { kind: 'response', id: known, error: { code: ErrorCode.internal, message: 'the client answered with a malformed error object' } };
    }
    return error !== undefined ? { kind: 'response', id: known, error } : { kind: 'response', id: known, result: object.result };
  }
  if (typeof object.method !== 'string') throw invalid(ErrorCode.invalidRequest, 'method must be a string');
  const params = object.params ?? {};
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw invalid(ErrorCode.invalidParams, `params of ${object.method} must be an object (by name), got ${preview(shown(params))}`);
  }
  const shaped = params as Record<string, unknown>;
  return hasId ? { kind: 'request', id: known, method: object.method, params: shaped } : { kind: 'notification', method: object.method, params: shaped };
}

/**
 * The id of a line that fails to parse but begins as a response does: `{`, then members at the
 * top level up to a numeric `"id"`, and no `"method"` among them. Strings are skipped whole, so
 * an `"id"` inside a result is not taken for it. Undefined when the line does not read so far.
 */
export function replyId(line: string): number | undefined {
  let depth = 0;
  let id: number | undefined;
  let key: string | undefined;
  let expectKey = false;
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (char === '"') {
      let end = i + 1;
      while (end < line.length && line[end] !== '"') end += line[end] === '\\' ? 2 : 1;
      if (end >= line.length) break;
      const text = line.slice(i + 1, end);
      if (depth === 1 && expectKey) {
        if (text === 'method') return undefined;
        key = text;
        expectKey = false;
      }
      i = end;
    } else if (char === '{' || char === '[') {
      if (depth === 0 && char !== '{') return undefined;
      depth++;
      if (depth === 1) expectKey = true;
    } else if (char === '}' || char === ']') {
      depth--;
      if (depth <= 0) break;
    } else if (char === ',' && depth === 1) {
      expectKey = true;
    } else if (char === ':' && depth === 1 && key === 'id') {
      const digits = /^\s*(\d{1,15})\s*[,}]/.exec(line.slice(i + 1));
      if (digits !== null) id = Number(digits[1]);
      key = undefined;
    } else if (depth === 0 && !/\s/.test(char)) {
      return undefined;
    }
  }
  return id;
}

export function encodeMessage(message: object): string {
  return `${jsonText(message)}\n`;
}

/** A value the client sent, as JSON text for a message; one JSON cannot hold (1e400 read as Infinity) as JavaScript shows it. */
function shown(value: unknown): string {
  try {
    return jsonText(value) ?? 'nothing';
  } catch (error) {
    if (!(error instanceof LossyValueError)) throw error;
    return String(value);
  }
}

export function preview(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
