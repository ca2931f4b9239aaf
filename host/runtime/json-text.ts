// JSON text of a result for the front ends (`ptc run --json`, `ptc serve`, `ptc mcp`): the same
// text as lossless-json's stringify, but written with an explicit stack. A completion value may be
// nested as deep as memory allows (the carrier and the host's decoder are iterative too), and a
// recursive writer overflows the call stack near 10,000 levels, so the front end would print no
// result at all. lossless-json's own writer is about twice as fast, so it goes first, and the
// explicit stack takes over only when it runs out of stack.
import { isLosslessNumber, stringify } from 'lossless-json';

const KEEP_NEGATIVE_ZERO = [{ test: (value: unknown) => Object.is(value, -0), stringify: () => '-0' }];

export interface JsonTextOptions {
  /** Write -0 as `-0`; JSON.stringify (and lossless-json) write it as `0`. @default false */
  negativeZero?: boolean;
}

interface Frame {
  readonly value: object;
  /** Object.keys of an object; undefined for an array. */
  readonly keys: string[] | undefined;
  readonly length: number;
  index: number;
  text: string;
  /** Whether a member was written (an object's members may be skipped). */
  wrote: boolean;
  /** The object key this frame is written under in its parent, once it closes. */
  readonly key: string | undefined;
}

/** The JSON text of `value` as lossless-json's stringify writes it; undefined where it writes nothing. */
export function jsonText(value: unknown, options: JsonTextOptions = {}): string | undefined {
  try {
    return stringify(value, undefined, undefined, options.negativeZero ? KEEP_NEGATIVE_ZERO : undefined);
  } catch (error) {
    // A stack overflow is a RangeError; anything else (a toJSON that throws) is the caller's.
    if (!(error instanceof RangeError)) throw error;
  }
  return stackText(value, options);
}

/** jsonText with an explicit stack: any depth. */
export function stackText(value: unknown, options: JsonTextOptions = {}): string | undefined {
  const stack: Frame[] = [];
  let result: string | undefined;

  /** Text of a scalar, undefined for what JSON leaves out, or null after pushing a frame for a container. */
  const open = (item: unknown, key: string | undefined): string | undefined | null => {
    let current = item;
    // Dates and other objects with toJSON are written as what toJSON returns, as JSON.stringify does.
    while (current !== null && typeof current === 'object' && !isLosslessNumber(current) && !(current instanceof Date) && typeof (current as { toJSON?: unknown }).toJSON === 'function') {
      current = (current as { toJSON(): unknown }).toJSON();
    }
    if (options.negativeZero && Object.is(current, -0)) return '-0';
    if (typeof current === 'boolean' || typeof current === 'number' || typeof current === 'string' || current === null || current instanceof Date || current instanceof Boolean || current instanceof Number || current instanceof String) {
      return JSON.stringify(current);
    }
    if (isLosslessNumber(current) || typeof current === 'bigint') return String(current);
    if (Array.isArray(current)) {
      stack.push({ value: current, keys: undefined, length: current.length, index: 0, text: '', wrote: false, key });
      return null;
    }
    if (current !== undefined && typeof current === 'object') {
      const keys = Object.keys(current);
      stack.push({ value: current, keys, length: keys.length, index: 0, text: '', wrote: false, key });
      return null;
    }
    return undefined;
  };

  /** Appends a member's text to the frame on top, or makes it the result when there is none. */
  const place = (text: string | undefined, key: string | undefined, inArray: boolean): void => {
    const parent = stack.at(-1);
    if (parent === undefined) {
      result = text;
      return;
    }
    if (inArray) {
      parent.text += `${parent.wrote ? ',' : ''}${text ?? 'null'}`;
      parent.wrote = true;
      return;
    }
    if (text === undefined) return;
    parent.text += `${parent.wrote ? ',' : ''}${JSON.stringify(key)}:${text}`;
    parent.wrote = true;
  };

  const first = open(value, undefined);
  if (first !== null) return first;
  while (stack.length > 0) {
    const frame = stack.at(-1)!;
    if (frame.index === frame.length) {
      stack.pop();
      const closed = frame.keys === undefined ? `[${frame.text}]` : `{${frame.text}}`;
      place(closed, frame.key, stack.at(-1)?.keys === undefined);
      continue;
    }
    const index = frame.index++;
    if (frame.keys === undefined) {
      const element = (frame.value as unknown[])[index];
      const text = typeof element === 'function' ? undefined : open(element, undefined);
      if (text !== null) place(text, undefined, true);
      continue;
    }
    const key = frame.keys[index]!;
    const member = (frame.value as Record<string, unknown>)[key];
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    const text = open(member, key);
    if (text !== null) place(text, key, false);
  }
  return result;
}
