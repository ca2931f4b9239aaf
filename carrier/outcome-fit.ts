// A run's outcome travels as one reply frame, and a frame over maxMessageBytes ends the run as
// `protocol`. What the program threw is its own text (an error's message and stack, a property
// path), so an oversized diagnostic is cut to fit rather than lose the exception. The completion
// value is never cut: one too large is reported as `oversized` before it gets here.
import { encodeJson } from './protocol/json.ts';
import type { ErrorInfo, RunOutcome } from './protocol/messages.ts';

/** Room for the reply envelope around an outcome: {"t":"s","i":<request id>,"r":…}, about 40 bytes. */
export const REPLY_ENVELOPE = 256;

const byteLength = Buffer.byteLength;

/**
 * The outcome, its diagnostic strings cut so that the reply fits `maxMessageBytes`. Every string
 * is held to one common cap, the largest that fits: short fields (a name, a code) stay whole and
 * the long ones (a message, a stack, a path with a huge key) share what is left.
 */
export function fitOutcome(outcome: RunOutcome, maxMessageBytes: number): RunOutcome {
  const budget = maxMessageBytes - REPLY_ENVELOPE;
  if (encodedBytes(outcome) <= budget) return outcome;
  let holder: Record<string, unknown>;
  let fields: string[];
  if (outcome.status === 'exception') {
    holder = outcome.error as ErrorInfo & Record<string, unknown>;
    fields = ['message', 'stack', 'excerpt', 'name', 'code', 'binding'];
  } else if (outcome.status === 'invalid-output') {
    holder = outcome as unknown as Record<string, unknown>;
    fields = ['message', 'path'];
  } else {
    return outcome;
  }
  const original = new Map<string, string>();
  for (const field of fields) if (typeof holder[field] === 'string') original.set(field, holder[field]);
  const capTo = (cap: number): void => {
    for (const [field, text] of original) holder[field] = encodedBytes(text) <= cap ? text : prefixEncodedWithin(text, cap);
  };
  let low = 0;
  let high = Math.max(0, ...[...original.values()].map(encodedBytes));
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    capTo(middle);
    if (encodedBytes(outcome) <= budget) low = middle;
    else high = middle - 1;
  }
  capTo(low);
  return outcome;
}

function encodedBytes(value: unknown): number {
  return byteLength(encodeJson(value, 'outcome'));
}

/** The longest prefix of `text`, cut between code points, whose JSON string form takes at most `limit` bytes. */
function prefixEncodedWithin(text: string, limit: number): string {
  if (limit <= 2) return '';
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (encodedBytes(cutAt(text, middle)) <= limit) low = middle;
    else high = middle - 1;
  }
  return cutAt(text, low);
}

/** `text` up to `length` code units, dropping a high surrogate whose pair the cut would split. */
function cutAt(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}
