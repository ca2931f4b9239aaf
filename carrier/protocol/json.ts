// Lossless JSON: the only value format that crosses the wire. A value is lossless when a JSON
// round trip gives it back exactly: finite numbers, bigints, strings, booleans, null, plain objects
// and dense arrays. The encoder names the path of the first value that is not, instead of letting
// JSON.stringify silently drop or change it.
//
// Intrinsics are captured at module load, before any program runs, so a program that overwrites
// `JSON`, `Array`, `Object` or `String` cannot change how the carrier encodes its result.

const stringifyString = JSON.stringify as (value: string) => string;
const { isArray } = Array;
const { getPrototypeOf, prototype: objectPrototype } = Object;
const { ownKeys, apply, getOwnPropertyDescriptor } = Reflect;
const SetCtor = Set;
const { has: setHas, add: setAdd, delete: setDelete } = Set.prototype;
const toTag = objectPrototype.toString;
const numberToString = Number.prototype.toString;
const bigintToString = BigInt.prototype.toString;
const arrayJoin = Array.prototype.join;
const arrayPush = Array.prototype.push;
const hasOwn = Object.hasOwn;
const isFiniteNumber = Number.isFinite;
const isIntegerNumber = Number.isInteger;
const isSafeIntegerNumber = Number.isSafeInteger;
const numberToExponential = Number.prototype.toExponential;
const identifierPattern = /^[A-Za-z_$][\w$]*$/;
const regexpTest = RegExp.prototype.test;
const BigIntCtor = BigInt;
const NumberCtor = Number;

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue };

/** Thrown when a value would not survive a JSON round trip; `path` names where. */
export class LossyValueError extends Error {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`${path} ${problem}`);
    this.name = 'LossyValueError';
    this.path = path;
  }
}

export interface EncodeOptions {
  /** Called for every non-plain object; return JSON text to use in its place, or undefined to reject it. */
  replaceObject?(value: object, path: string): string | undefined;
  /** Reports whether a value is a Proxy (which could answer differently on each read). */
  isProxy?(value: object): boolean;
  /** Leave out object members whose value is undefined, as JSON.stringify does (wire frames only). */
  skipUndefinedMembers?: boolean;
}

/** Encodes a value as lossless JSON text, or throws LossyValueError naming the first lossy path. */
export function encodeJson(value: unknown, root: string, options: EncodeOptions = {}): string {
  const seen = new SetCtor<object>();
  try {
    return encode(value, root, options, seen);
  } catch (error) {
    if (error instanceof RangeError) throw new LossyValueError(root, 'is nested too deeply to encode');
    throw error;
  }
}

// A path is built only when something fails: the common case encodes without a string per member.
type Path = string | { parent: Path; key: string | number };

function formatPath(path: Path): string {
  if (typeof path === 'string') return path;
  const { parent, key } = path;
  if (typeof key === 'number') return `${formatPath(parent)}[${key}]`;
  return apply(regexpTest, identifierPattern, [key]) ? `${formatPath(parent)}.${key}` : `${formatPath(parent)}[${stringifyString(key)}]`;
}

function lossy(path: Path, problem: string): LossyValueError {
  return new LossyValueError(formatPath(path), problem);
}

function encode(value: unknown, path: Path, options: EncodeOptions, seen: Set<object>): string {
  switch (typeof value) {
    case 'string':
      return stringifyString(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!isFiniteNumber(value)) throw lossy(path, `is ${apply(numberToString, value, [])}, which JSON cannot represent`);
      // -0 keeps its sign, and an integer beyond 2^53 is written with an exponent: as plain digits
      // decodeJson would read it back as a bigint (and, from toString's rounded digits, a different one).
      if (value === 0) return 1 / value < 0 ? '-0' : '0';
      if (isIntegerNumber(value) && !isSafeIntegerNumber(value)) return apply(numberToExponential, value, []);
      return apply(numberToString, value, []);
    case 'bigint':
      return apply(bigintToString, value, []);
    case 'undefined':
      throw lossy(path, 'is undefined, which JSON drops');
    case 'function':
      throw lossy(path, 'is a function, which JSON cannot represent');
    case 'symbol':
      throw lossy(path, 'is a symbol, which JSON cannot represent');
  }
  if (value === null) return 'null';
  const object = value as object;
  if (options.isProxy?.(object)) throw lossy(path, 'is a Proxy, which is not plain data');
  if (apply(setHas, seen, [object])) throw lossy(path, 'is a circular reference');
  if (isArray(object)) {
    apply(setAdd, seen, [object]);
    const items: string[] = [];
    const length = (object as unknown[]).length;
    for (let index = 0; index < length; index++) {
      const itemPath = { parent: path, key: index };
      if (!hasOwn(object, index)) throw lossy(itemPath, 'is a hole in a sparse array');
      apply(arrayPush, items, [encode((object as unknown[])[index], itemPath, options, seen)]);
    }
    apply(setDelete, seen, [object]);
    return `[${apply(arrayJoin, items, [','])}]`;
  }
  if (!isPlainObject(object)) {
    const replaced = options.replaceObject?.(object, formatPath(path));
    if (replaced !== undefined) return replaced;
    throw lossy(path, `is ${describe(object)}, which is not plain JSON data`);
  }
  apply(setAdd, seen, [object]);
  const members: string[] = [];
  for (const key of ownKeys(object)) {
    if (typeof key === 'symbol') throw lossy(path, `has a symbol key ${String(key.description)}, which JSON drops`);
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined || !descriptor.enumerable) continue;
    const member = 'value' in descriptor ? descriptor.value : (object as Record<string, unknown>)[key];
    if (member === undefined && options.skipUndefinedMembers) continue;
    apply(arrayPush, members, [`${stringifyString(key)}:${encode(member, { parent: path, key }, options, seen)}`]);
  }
  apply(setDelete, seen, [object]);
  return `{${apply(arrayJoin, members, [','])}}`;
}

/** True for objects whose prototype is null or a realm's Object.prototype. */
export function isPlainObject(value: object): boolean {
  const proto = getPrototypeOf(value);
  if (proto === null) return true;
  return getPrototypeOf(proto) === null && apply(toTag, value, []) === '[object Object]';
}

function describe(value: object): string {
  const tag = apply(toTag, value, []) as string;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  const kind = typeof name === 'string' && name !== '' ? name : tag.slice(8, -1);
  return /^[AEIOU]/.test(kind) ? `an ${kind}` : `a ${kind}`;
}

// Decoding lives in decode.ts: it must not recurse, whatever the depth of what the peer sends.
export { decodeJson } from './decode.ts';
