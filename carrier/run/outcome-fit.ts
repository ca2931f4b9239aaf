// A run's outcome travels as one reply frame, and a frame over maxMessageBytes ends the run as
// `protocol`. What the program threw is its own text (an error's message and stack, a property
// path), so an oversized diagnostic is cut to fit rather than lose the exception, and marked as
// cut (`truncated`), so the caller knows it holds a prefix. The completion
// value is never cut: one too large is reported as `oversized` before it gets here.
//
// This runs after the program, so it uses only intrinsics captured at load, and it measures in
// one pass per string: a diagnostic can be hundreds of megabytes.
import { encodeJson } from '../../wire/json.ts';
import type { RunOutcome } from '../../wire/messages.ts';
import { cutToEscapedBytes, escapedBytes } from '../../wire/limits.ts';

/** Room for the reply envelope around an outcome: {"t":"s","i":<request id>,"r":…}, about 40 bytes. */
export const REPLY_ENVELOPE = 256;

const byteLength = Buffer.byteLength;
const { ceil } = Math;

const EXCEPTION_FIELDS = ['message', 'stack', 'excerpt', 'name', 'code', 'binding'];
/** What marking the outcome as cut adds to its JSON: the field goes last. */
const TRUNCATED_MARK = byteLength(',"truncated":true');
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
    const length = escapedBytes(text);
    names[names.length] = fields[i]!;
    lengths[lengths.length] = length;
    fieldBytes += length;
    if (length > longest) longest = length;
  }
  // What the fields' JSON strings may take together; the rest of the outcome, and the mark, stay as they are.
  const room = budget - (total + TRUNCATED_MARK - fieldBytes);
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
    if (lengths[i]! > low) holder[names[i]!] = cutToEscapedBytes(holder[names[i]!] as string, low);
  }
  (outcome as { truncated?: boolean }).truncated = true;
  return outcome;
}
