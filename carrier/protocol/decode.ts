// Decoding lossless JSON without recursion. Values come from the other side of the wire, so their
// depth is the sender's choice: the decoder keeps its own stack of open containers and handles any
// nesting the text has (a recursive parser, lossless-json's or V8's reviver pass, overflows the
// call stack at a depth that depends on how much stack is left).
//
// Text without a run of 16 digits cannot hold an integer beyond 2^53, and V8's JSON.parse (which
// is iterative) reads it exactly; only the rest goes through the parser below. Intrinsics are
// captured at load, before any program runs, because the carrier decodes binding results with it.
import type { JsonValue } from './json.ts';

const nativeParse = JSON.parse as (text: string) => unknown;
const { apply } = Reflect;
const { defineProperty } = Object;
const regexpTest = RegExp.prototype.test;
const regexpExec = RegExp.prototype.exec;
const stringSlice = String.prototype.slice;
const stringCharCodeAt = String.prototype.charCodeAt;
const stringIndexOf = String.prototype.indexOf;
const BigIntCtor = BigInt;
const NumberCtor = Number;
const isSafeInteger = Number.isSafeInteger;
const SyntaxErrorCtor = SyntaxError;

const longDigits = /\d{16}/;
// JSON's number grammar, anchored at lastIndex; group 1 is the fraction, group 2 the exponent.
const numberPattern = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const controlCharacter = /[\u0000-\u001f]/;

/** Parses JSON text, turning integers beyond 2^53 into bigint so they survive exactly; throws SyntaxError. */
export function decodeJson(text: string): JsonValue {
  if (!apply(regexpTest, longDigits, [text])) return nativeParse(text) as JsonValue;
  return parseLossless(text);
}

/** An open array or object, and for an object the key whose value comes next. */
interface Open {
  container: JsonValue[] | { [key: string]: JsonValue };
  isArray: boolean;
  key: string | undefined;
}

function parseLossless(text: string): JsonValue {
  const length = text.length;
  const stack: Open[] = [];
  let position = 0;
  let root: JsonValue | undefined;
  let done = false;

  const fail = (what: string): never => {
    const found = position >= length ? 'the end of the text' : `"${apply(stringSlice, text, [position, position + 12]) as string}"`;
    throw new SyntaxErrorCtor(`${what} at position ${position} (found ${found})`);
  };
  const skipSpace = (): void => {
    while (position < length) {
      const code = apply(stringCharCodeAt, text, [position]) as number;
      if (code !== 0x20 && code !== 0x0a && code !== 0x0d && code !== 0x09) return;
      position++;
    }
  };
  // The closing quote is the first one not escaped by an odd run of backslashes; JSON.parse then
  // checks and unescapes the body, which only strings with escapes or control characters need.
  const readString = (): string => {
    const start = position;
    let end = apply(stringIndexOf, text, ['"', start + 1]) as number;
    for (;;) {
      if (end === -1) fail('unterminated string');
      let backslashes = 0;
      while (apply(stringCharCodeAt, text, [end - 1 - backslashes]) === 0x5c) backslashes++;
      if (backslashes % 2 === 0) break;
      end = apply(stringIndexOf, text, ['"', end + 1]) as number;
    }
    position = end + 1;
    const body = apply(stringSlice, text, [start, position]) as string;
    if ((apply(stringIndexOf, body, ['\\']) as number) === -1 && !apply(regexpTest, controlCharacter, [body])) return apply(stringSlice, body, [1, -1]) as string;
    return nativeParse(body) as string;
  };
  // Places a finished value in its parent, or makes it the root.
  const place = (value: JsonValue): void => {
    const top = stack[stack.length - 1];
    if (top === undefined) {
      root = value;
      done = true;
    } else if (top.isArray) {
      const array = top.container as JsonValue[];
      defineProperty(array, array.length, { value, writable: true, enumerable: true, configurable: true });
    } else {
      // defineProperty, so a "__proto__" key is a member (as JSON.parse makes it), not a prototype.
      defineProperty(top.container, top.key!, { value, writable: true, enumerable: true, configurable: true });
      top.key = undefined;
    }
  };

  for (;;) {
    skipSpace();
    const top = stack[stack.length - 1];
    // Inside an object, a value is preceded by its key.
    if (top !== undefined && !top.isArray && top.key === undefined) {
      if (apply(stringCharCodeAt, text, [position]) !== 0x22) fail('expected a string key');
      top.key = readString();
      skipSpace();
      if (apply(stringCharCodeAt, text, [position]) !== 0x3a) fail("expected ':'");
      position++;
      skipSpace();
    }
    const code = apply(stringCharCodeAt, text, [position]) as number;
    if (code === 0x5b || code === 0x7b) {
      position++;
      const isArray = code === 0x5b;
      const container = isArray ? [] : {};
      skipSpace();
      const close = apply(stringCharCodeAt, text, [position]);
      if (close === (isArray ? 0x5d : 0x7d)) {
        position++;
        place(container);
      } else {
        stack[stack.length] = { container, isArray, key: undefined };
        continue;
      }
    } else if (code === 0x22) {
      place(readString());
    } else if (code === 0x74 && apply(stringSlice, text, [position, position + 4]) === 'true') {
      position += 4;
      place(true);
    } else if (code === 0x66 && apply(stringSlice, text, [position, position + 5]) === 'false') {
      position += 5;
      place(false);
    } else if (code === 0x6e && apply(stringSlice, text, [position, position + 4]) === 'null') {
      position += 4;
      place(null);
    } else {
      numberPattern.lastIndex = position;
      const match = apply(regexpExec, numberPattern, [text]) as RegExpExecArray | null;
      if (match === null) fail('expected a JSON value');
      const source = match![0];
      position += source.length;
      place(numberValue(source, match![1] !== undefined || match![2] !== undefined));
    }
    // Close every container that ends here, and step over the comma before the next member.
    for (;;) {
      if (done) {
        skipSpace();
        if (position !== length) fail('unexpected text after the JSON value');
        return root!;
      }
      skipSpace();
      const open = stack[stack.length - 1]!;
      const next = apply(stringCharCodeAt, text, [position]);
      if (next === 0x2c) {
        position++;
        break;
      }
      if (next !== (open.isArray ? 0x5d : 0x7d)) fail(open.isArray ? "expected ',' or ']'" : "expected ',' or '}'");
      position++;
      stack.length--;
      place(open.container);
    }
  }
}

// Integers that a double holds exactly stay numbers; the rest keep their digits as bigint.
function numberValue(source: string, fractional: boolean): number | bigint {
  const value = NumberCtor(source);
  if (fractional || isSafeInteger(value)) return value;
  return BigIntCtor(source);
}
