// Decoding lossless JSON without recursion. Values come from the other side of the wire, so their
// depth is the sender's choice: the decoder keeps its own stack of open containers and handles any
// nesting the text has (a recursive parser, lossless-json's or V8's reviver pass, overflows the
// call stack at a depth that depends on how much stack is left).
//
// Text without a run of 16 digits cannot hold an integer beyond 2^53, and V8's JSON.parse (which
// is iterative) reads it exactly; only the rest goes through the parser below. Intrinsics are
// captured at load, before any program runs, because the carrier decodes binding results with it.
import type { JsonValue } from './json.ts';

const uncurry = <T extends (...args: any[]) => any>(method: T) =>
  Function.prototype.call.bind(method) as unknown as (self: unknown, ...args: Parameters<T>) => ReturnType<T>;
const nativeParse = JSON.parse as (text: string) => unknown;
const { defineProperty } = Object;
// exec itself: RegExp.prototype.test looks up `exec` on the pattern, which reaches the prototype.
const regexpExec = uncurry(RegExp.prototype.exec);
const regexpTest = (pattern: RegExp, text: string): boolean => regexpExec(pattern, text) !== null;
const charCodeAt = uncurry(String.prototype.charCodeAt);
const slice = uncurry(String.prototype.slice);
const indexOf = uncurry(String.prototype.indexOf);
const BigIntCtor = BigInt;
const NumberCtor = Number;
const isSafeInteger = Number.isSafeInteger;
const SyntaxErrorCtor = SyntaxError;

const longDigits = /\d{16}/;
const controlCharacter = /[\u0000-\u001f]/;

/** Parses JSON text, turning integers beyond 2^53 into bigint so they survive exactly; throws SyntaxError. */
export function decodeJson(text: string): JsonValue {
  if (!regexpTest(longDigits, text)) return nativeParse(text) as JsonValue;
  return finish(parse(text, Infinity, Infinity));
}

/** Text above this many characters is decoded in slices, yielding to the event loop between them. */
export const ASYNC_DECODE_THRESHOLD = 1 << 20;
/** Values parsed per slice: about ten milliseconds of work. */
const VALUES_PER_SLICE = 1 << 13;

/**
 * decodeJson for text from a peer that must not stall the event loop: long text is parsed in
 * slices (by this parser even when JSON.parse could read it, since JSON.parse cannot pause).
 */
export async function decodeJsonAsync(text: string): Promise<JsonValue> {
  if (text.length <= ASYNC_DECODE_THRESHOLD) return decodeJson(text);
  const steps = parse(text, Infinity, VALUES_PER_SLICE);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Parses a control frame's envelope: small structures whose strings may be long. More than
 * `maxValues` values is refused at once, so a frame of a million numbers costs nothing to refuse.
 */
export function decodeEnvelope(text: string, maxValues: number): JsonValue {
  return finish(parse(text, maxValues, Infinity));
}

function finish(steps: Generator<void, JsonValue>): JsonValue {
  return steps.next().value as JsonValue;
}

type Container = JsonValue[] | { [key: string]: JsonValue };

// The parser's state: open containers are parallel stacks (container, and for objects the key
// whose value comes next), so a level costs two slots rather than an object. It pauses (yields)
// after every `valuesPerSlice` values.
function* parse(text: string, maxValues: number, valuesPerSlice: number): Generator<void, JsonValue> {
  const length = text.length;
  let values = 0;
  let sliceEnd = valuesPerSlice;
  const containers: Container[] = [];
  const keys: Array<string | undefined> = [];
  let depth = 0;
  let position = 0;

  const fail = (what: string): never => {
    const found = position >= length ? 'the end of the text' : `"${slice(text, position, position + 12)}"`;
    throw new SyntaxErrorCtor(`${what} at position ${position} (found ${found})`);
  };
  const skipSpace = (): void => {
    let code = charCodeAt(text, position);
    while (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) code = charCodeAt(text, ++position);
  };
  // The closing quote is the first one not escaped by an odd run of backslashes; JSON.parse then
  // checks and unescapes the body, which only strings with escapes or control characters need.
  const readString = (): string => {
    const start = position;
    let end = indexOf(text, '"', start + 1);
    for (;;) {
      if (end === -1) fail('unterminated string');
      let backslashes = 0;
      while (charCodeAt(text, end - 1 - backslashes) === 0x5c) backslashes++;
      if (backslashes % 2 === 0) break;
      end = indexOf(text, '"', end + 1);
    }
    position = end + 1;
    const body = slice(text, start + 1, end);
    if (indexOf(body, '\\') === -1 && !regexpTest(controlCharacter, body)) return body;
    return nativeParse(slice(text, start, end + 1)) as string;
  };
  const readNumber = (): number | bigint => {
    const start = position;
    if (charCodeAt(text, position) === 0x2d) position++;
    const first = charCodeAt(text, position);
    if (first === 0x30) position++;
    else if (first >= 0x31 && first <= 0x39) while (isDigit(charCodeAt(text, position))) position++;
    else fail('expected a JSON value');
    let integer = true;
    if (charCodeAt(text, position) === 0x2e) {
      integer = false;
      if (!isDigit(charCodeAt(text, ++position))) fail('expected a digit');
      while (isDigit(charCodeAt(text, position))) position++;
    }
    const exponent = charCodeAt(text, position);
    if (exponent === 0x65 || exponent === 0x45) {
      integer = false;
      const sign = charCodeAt(text, ++position);
      if (sign === 0x2b || sign === 0x2d) position++;
      if (!isDigit(charCodeAt(text, position))) fail('expected a digit');
      while (isDigit(charCodeAt(text, position))) position++;
    }
    const source = slice(text, start, position);
    const value = NumberCtor(source);
    // Integers that a double holds exactly stay numbers; the rest keep their digits as bigint.
    return integer && !isSafeInteger(value) ? BigIntCtor(source) : value;
  };

  for (;;) {
    if (++values > maxValues) fail(`more than ${maxValues} values`);
    if (values > sliceEnd) {
      sliceEnd = values + valuesPerSlice;
      yield;
    }
    skipSpace();
    // Inside an object, a value is preceded by its key.
    if (depth > 0 && keys[depth - 1] === null) {
      if (charCodeAt(text, position) !== 0x22) fail('expected a string key');
      keys[depth - 1] = readString();
      skipSpace();
      if (charCodeAt(text, position) !== 0x3a) fail("expected ':'");
      position++;
      skipSpace();
    }
    let value: JsonValue;
    const code = charCodeAt(text, position);
    if (code === 0x5b || code === 0x7b) {
      position++;
      skipSpace();
      const isArray = code === 0x5b;
      if (charCodeAt(text, position) === (isArray ? 0x5d : 0x7d)) {
        position++;
        value = isArray ? [] : {};
      } else {
        containers[depth] = isArray ? [] : {};
        // undefined marks an array; null an object waiting for its next key.
        keys[depth] = isArray ? undefined : (null as unknown as string);
        depth++;
        continue;
      }
    } else if (code === 0x22) {
      value = readString();
    } else if (code === 0x74 && slice(text, position, position + 4) === 'true') {
      position += 4;
      value = true;
    } else if (code === 0x66 && slice(text, position, position + 5) === 'false') {
      position += 5;
      value = false;
    } else if (code === 0x6e && slice(text, position, position + 4) === 'null') {
      position += 4;
      value = null;
    } else {
      value = readNumber();
    }
    // Place the value, close every container that ends here, and step over the comma before the next member.
    for (;;) {
      if (depth === 0) {
        skipSpace();
        if (position !== length) fail('unexpected text after the JSON value');
        return value;
      }
      const container = containers[depth - 1]!;
      const key = keys[depth - 1];
      if (key === undefined) {
        const array = container as JsonValue[];
        array[array.length] = value;
      } else if (key === '__proto__') {
        // A member, as JSON.parse makes it, not the prototype.
        defineProperty(container, key, { value, writable: true, enumerable: true, configurable: true });
        keys[depth - 1] = null as unknown as string;
      } else {
        (container as { [key: string]: JsonValue })[key] = value;
        keys[depth - 1] = null as unknown as string;
      }
      skipSpace();
      const next = charCodeAt(text, position);
      if (next === 0x2c) {
        position++;
        break;
      }
      if (next !== (key === undefined ? 0x5d : 0x7d)) fail(key === undefined ? "expected ',' or ']'" : "expected ',' or '}'");
      position++;
      depth--;
      containers[depth] = undefined as unknown as Container;
      value = container;
    }
  }
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}
