// A run's outcome travels as one reply frame, and a frame over maxMessageBytes ends the run as
// `protocol`. What the program threw is its own text (an error's message and stack, a property
// path), so an oversized diagnostic is cut to fit rather than lose the exception. The completion
// value is never cut: one too large is reported as `oversized` before it gets here.
//
// This runs after the program, so it uses only intrinsics captured at load, and it measures in
// one pass per string: a diagnostic can be hundreds of megabytes.
import { encodeJson } from './protocol/json.ts';
import type { RunOutcome } from './protocol/messages.ts';

/** Room for the reply envelope around an outcome: {"t":"s","i":<request id>,"r":…}, about 40 bytes. */
export const REPLY_ENVELOPE = 256;

const { apply } = Reflect;
const charCodeAt = String.prototype.charCodeAt;
const sliceString = String.prototype.slice;
const byteLength = Buffer.byteLength;
const { ceil } = Math;

const EXCEPTION_FIELDS = ['message', 'stack', 'excerpt', 'name', 'code', 'binding'];
const INVALID_OUTPUT_FIELDS = ['message', 'path'];

/**
 * The outcome, its diagnostic strings cut so that the reply fits `maxMessageBytes`. Every string
 * is held to one common cap, the largest that fits: short fields (a name, a code) stay whole and
 * the long ones (a message, a stack, a path with a huge key) share what is left.
 */
export function fitOutcome(outcome: RunOutcome, maxMessageBytes: number): RunOutcome {
  const budget = maxMessageBytes - REPLY_ENVELOPE;
  const total = byteLength(encodeJson(outcome, 'outcome'));
  if (total <= budget) return outcome;
  let holder: Record<string, unknown>;
  let fields: string[];
  if (outcome.status === 'exception') {
    holder = outcome.error as unknown as Record<string, unknown>;
    fields = EXCEPTION_FIELDS;
  } else if (outcome.status === 'invalid-output') {
    holder = outcome as unknown as Record<string, unknown>;
    fields = INVALID_OUTPUT_FIELDS;
  } else {
    return outcome;
  }
  const names: string[] = [];
  const lengths: number[] = [];
  let fieldBytes = 0;
  let longest = 0;
  for (let i = 0; i < fields.length; i++) {
    const text = holder[fields[i]!];
    if (typeof text !== 'string') continue;
    const length = encodedLength(text);
    names[names.length] = fields[i]!;
    lengths[lengths.length] = length;
    fieldBytes += length;
    if (length > longest) longest = length;
  }
  // What the fields' JSON strings may take together; the rest of the outcome stays as it is.
  const room = budget - (total - fieldBytes);
  let low = 2; // an empty string's quotes
  let high = longest;
  while (low < high) {
    const cap = ceil((low + high) / 2);
    let sum = 0;
    for (let i = 0; i < lengths.length; i++) sum += lengths[i]! < cap ? lengths[i]! : cap;
    if (sum <= room) low = cap;
    else high = cap - 1;
  }
  for (let i = 0; i < names.length; i++) {
    if (lengths[i]! > low) holder[names[i]!] = prefixWithin(holder[names[i]!] as string, low);
  }
  return outcome;
}

/** The UTF-8 bytes of `text` as a JSON string, quotes included: what JSON.stringify makes of it. */
export function encodedLength(text: string): number {
  let bytes = 2;
  for (let i = 0; i < text.length; i++) {
    const width = unitWidth(text, i);
    bytes += width;
    if (width === 4) i++; // a surrogate pair: both units counted
  }
  return bytes;
}

/** The longest prefix of `text`, never splitting a surrogate pair, whose JSON string takes at most `limit` bytes. */
export function prefixWithin(text: string, limit: number): string {
  let bytes = 2;
  let i = 0;
  while (i < text.length) {
    const width = unitWidth(text, i);
    if (bytes + width > limit) break;
    bytes += width;
    i += width === 4 ? 2 : 1;
  }
  return apply(sliceString, text, [0, i]) as string;
}

/** Bytes the code unit at `i` takes in a JSON string; 4 for a surrogate pair starting there. */
function unitWidth(text: string, i: number): number {
  const code = apply(charCodeAt, text, [i]) as number;
  if (code < 0x20) return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6; // \n, or \u0001
  if (code === 0x22 || code === 0x5c) return 2; // \" and \\
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdbff) {
    const next = apply(charCodeAt, text, [i + 1]) as number;
    return next >= 0xdc00 && next <= 0xdfff ? 4 : 6; // a pair, or a lone surrogate escaped as \ud800
  }
  if (code >= 0xdc00 && code <= 0xdfff) return 6;
  return 3;
}
