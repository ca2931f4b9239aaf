// Lossless JSON: the only value format that crosses the wire, and the one writer that turns values
// into JSON text (the front ends print and send results with it too: host/runtime/json-text.ts).
// A value is lossless when a JSON round trip gives it back exactly: finite numbers, bigints,
// strings, booleans, null, plain objects and dense arrays. The encoder names the path of the first value that is not, instead of letting
// JSON.stringify silently drop or change it: an array with extra properties or another prototype,
// an object whose prototype is not a realm's Object.prototype (or null), a non-enumerable or
// accessor property, a symbol key, a hole, a Proxy.
//
// Intrinsics are captured at module load, before any program runs, so a program that overwrites
// `JSON`, `Array`, `Object`, `String` or their prototypes cannot change how the carrier encodes
// its result. The encoder runs no program code: it reads own data properties only (never a
// getter, a toJSON or an inherited member), and it walks the value with its own stack, so depth is
// bounded by memory rather than by the call stack.
import { types } from 'node:util';

const stringifyString = JSON.stringify as (value: string) => string;
const { isArray } = Array;
const { getPrototypeOf, setPrototypeOf, defineProperty, prototype: objectPrototype } = Object;
const { ownKeys, apply, getOwnPropertyDescriptor } = Reflect;
const SetCtor = Set;
const { has: setHas, add: setAdd, delete: setDelete } = Set.prototype;
const WeakSetCtor = WeakSet;
const { has: weakSetHas, add: weakSetAdd } = WeakSet.prototype;
const numberToString = Number.prototype.toString;
const bigintToString = BigInt.prototype.toString;
const charCodeAt = String.prototype.charCodeAt;
const hasOwn = Object.hasOwn;
const isFiniteNumber = Number.isFinite;
const isIntegerNumber = Number.isInteger;
const isSafeIntegerNumber = Number.isSafeInteger;
const numberToExponential = Number.prototype.toExponential;
const regexpTest = RegExp.prototype.test;
const BigIntCtor = BigInt;
const NumberCtor = Number;
const ErrorCtor = Error;

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue };

const lossyBrand = Symbol.for('ptc.LossyValueError');

/** Thrown when a value would not survive a JSON round trip; `path` names where. */
export class LossyValueError extends ErrorCtor {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`${path} ${problem}`);
    this.name = 'LossyValueError';
    this.path = path;
    defineProperty(this, lossyBrand, { value: true });
  }

  // A brand rather than the prototype chain: a catch block must not have to trust what it caught.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && hasOwn(value, lossyBrand);
  }
}

export interface EncodeOptions {
  /** Called for every non-plain object; return JSON text to use in its place, or undefined to reject it. */
  replaceObject?(value: object, path: string): string | undefined;
  /** Reports whether a value is a Proxy (which could answer differently on each read). */
  isProxy?(value: object): boolean;
  /** Leave out object members whose value is undefined, as JSON.stringify does (wire frames and front ends). */
  skipUndefinedMembers?: boolean;
  /** Write -0 as 0, as JSON.stringify does: what `ptc serve` and `ptc runs --json` have always sent. @default false */
  dropZeroSign?: boolean;
}

// The Object.prototype and Array.prototype of every realm whose plain data is accepted: this one,
// and each realm the carrier's evaluators create (see trustRealm). Identity, not shape: an object
// built to look like Object.prototype is still another prototype, whose members JSON would drop.
const objectPrototypes = new WeakSetCtor<object>();
const arrayPrototypes = new WeakSetCtor<object>();
apply(weakSetAdd, objectPrototypes, [objectPrototype]);
apply(weakSetAdd, arrayPrototypes, [Array.prototype]);

/**
 * Accepts the plain objects and arrays of another realm (a vm context's global object). Call it
 * when the realm is created, before any program runs in it: its prototypes are read once, here.
 */
export function trustRealm(globalObject: object): void {
  for (const [name, into] of [['Object', objectPrototypes], ['Array', arrayPrototypes]] as const) {
    const constructor = ownValue(globalObject, name);
    const prototype = typeof constructor === 'function' ? ownValue(constructor, 'prototype') : undefined;
    if (typeof prototype !== 'object' || prototype === null) throw new TypeError(`trustRealm: the global object has no intrinsic ${name}.prototype`);
    apply(weakSetAdd, into, [prototype]);
  }
}

function ownValue(object: object, key: string): unknown {
  const descriptor = getOwnPropertyDescriptor(object, key);
  return descriptor !== undefined && hasOwn(descriptor, 'value') ? descriptor.value : undefined;
}

// Objects with internal state that no own property shows: given Object.prototype as their
// prototype, they would still encode as `{}`.
const { isDate, isRegExp, isMap, isSet, isWeakMap, isWeakSet, isBoxedPrimitive, isPromise, isNativeError, isArrayBufferView, isAnyArrayBuffer } = types;
const hasHiddenState = (value: object): boolean =>
  isDate(value) || isRegExp(value) || isMap(value) || isSet(value) || isWeakMap(value) || isWeakSet(value) || isBoxedPrimitive(value)
  || isPromise(value) || isNativeError(value) || isArrayBufferView(value) || isAnyArrayBuffer(value);

/** True for ordinary objects whose prototype is null or a trusted realm's Object.prototype. */
export function isPlainObject(value: object): boolean {
  const proto = getPrototypeOf(value);
  return (proto === null || apply(weakSetHas, objectPrototypes, [proto])) && !hasHiddenState(value);
}

// A path is built only when something fails: the common case encodes without a string per member.
type Path = string | { readonly parent: Path; readonly key: string | number };

/**
 * One array or object being encoded: its keys (objects only), the next position and the output so
 * far. A class rather than a null-prototype literal, which V8 keeps as a dictionary: frames are
 * read and written for every member. Its fields are defined (not assigned) when it is built, so a
 * setter a program put on Object.prototype never sees them.
 */
class Frame {
  readonly value: object;
  readonly path: Path;
  /** Own string keys of an object; null for an array. */
  readonly keys: ArrayLike<string | symbol> | null;
  readonly length: number;
  index = 0;
  written = 0;
  text = '';
  constructor(value: object, path: Path, keys: ArrayLike<string | symbol> | null, length: number) {
    this.value = value;
    this.path = path;
    this.keys = keys;
    this.length = length;
  }
}

/** Encodes a value as lossless JSON text, or throws LossyValueError naming the first lossy path. */
export function encodeJson(value: unknown, root: string, options: EncodeOptions = {}): string {
  const seen = new SetCtor<object>();
  // No prototype, so that storing a frame cannot reach an index setter a program put on Array.prototype.
  const stack: Frame[] = setPrototypeOf([], null);
  let depth = 0;
  let result = '';

  /** Encodes a primitive, or opens a frame for an array or object; returns the text to append (empty for a frame). */
  const visit = (item: unknown, path: Path): string => {
    const primitive = encodePrimitive(item, path, options.dropZeroSign === true);
    if (primitive !== undefined) return primitive;
    const object = item as object;
    if (options.isProxy?.(object)) throw lossy(path, 'is a Proxy, which is not plain data');
    if (apply(setHas, seen, [object])) throw lossy(path, 'is a circular reference');
    const frame = openFrame(object, path, options);
    if (typeof frame === 'string') return frame;
    apply(setAdd, seen, [object]);
    stack[depth++] = frame;
    return '';
  };

  result = visit(value, root);
  while (depth > 0) {
    const frame = stack[depth - 1]!;
    if (frame.index === frame.length) {
      depth--;
      stack[depth] = undefined as never;
      apply(setDelete, seen, [frame.value]);
      const closed = frame.keys === null ? `[${frame.text}]` : `{${frame.text}}`;
      if (depth === 0) result = closed;
      else stack[depth - 1]!.text += closed;
      continue;
    }
    const index = frame.index++;
    const separator = frame.written++ === 0 ? '' : ',';
    if (frame.keys === null) {
      frame.text += separator;
      frame.text += visit(element(frame.value, index, frame.path), { parent: frame.path, key: index });
      continue;
    }
    const key = frame.keys[index]!;
    if (typeof key === 'symbol') throw lossy(frame.path, `has a symbol key ${symbolName(key)}, which JSON drops`);
    const memberPath = { parent: frame.path, key };
    const member = readMember(frame.value, key, memberPath);
    if (member === undefined && options.skipUndefinedMembers) {
      frame.written--;
      continue;
    }
    frame.text += `${separator}${stringifyString(key)}:`;
    frame.text += visit(member, memberPath);
  }
  return result;
}

/** JSON text of a primitive; undefined for an object (null is a primitive here). */
function encodePrimitive(value: unknown, path: Path, dropZeroSign: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
      return stringifyString(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!isFiniteNumber(value)) throw lossy(path, `is ${apply(numberToString, value, [])}, which JSON cannot represent`);
      // -0 keeps its sign, and an integer beyond 2^53 is written with an exponent: as plain digits
      // decodeJson would read it back as a bigint (and, from toString's rounded digits, a different one).
      if (value === 0) return 1 / value < 0 && !dropZeroSign ? '-0' : '0';
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
  return value === null ? 'null' : undefined;
}

/** A frame for a plain array or object, the replacement text for another object, or a LossyValueError. */
function openFrame(object: object, path: Path, options: EncodeOptions): Frame | string {
  if (isArray(object)) {
    if (!apply(weakSetHas, arrayPrototypes, [getPrototypeOf(object)])) {
      throw lossy(path, `is ${describe(object)}, an array with another prototype than Array.prototype, which JSON does not keep`);
    }
    const length = (object as unknown[]).length;
    const keys = ownKeys(object);
    // Index keys come first and number at most `length`; with 'length' itself, anything more is extra.
    if (keys.length > length + 1) throw extraArrayProperty(keys, length, path);
    return new Frame(object, path, null, length);
  }
  if (!isPlainObject(object)) {
    const replaced = options.replaceObject?.(object, formatPath(path));
    if (replaced !== undefined) return replaced;
    const proto = getPrototypeOf(object);
    if (proto === null || apply(weakSetHas, objectPrototypes, [proto])) {
      throw lossy(path, 'is an object with internal state (a Date, Map, Set, buffer, error or boxed primitive under Object.prototype), which JSON drops');
    }
    throw lossy(path, `is ${describe(object)}, which is not plain JSON data`);
  }
  const keys = ownKeys(object);
  return new Frame(object, path, keys, keys.length);
}

/** An array element, which must be an own, enumerable data property. */
function element(array: object, index: number, arrayPath: Path): unknown {
  const descriptor = getOwnPropertyDescriptor(array, index);
  if (descriptor === undefined) throw lossy({ parent: arrayPath, key: index }, 'is a hole in a sparse array');
  return dataValue(descriptor, { parent: arrayPath, key: index });
}

/** An object member, read from its descriptor so that no getter runs. */
function readMember(object: object, key: string, path: Path): unknown {
  return dataValue(getOwnPropertyDescriptor(object, key)!, path);
}

function dataValue(descriptor: PropertyDescriptor, path: Path): unknown {
  if (!hasOwn(descriptor, 'value')) throw lossy(path, 'is an accessor property (a getter or setter), which is not plain data');
  if (!descriptor.enumerable) throw lossy(path, 'is a non-enumerable property, which JSON drops');
  return descriptor.value;
}

/** A symbol key as a message names it: its description, or `Symbol()` for one without (not "undefined"). */
function symbolName(key: symbol): string {
  const description = key.description;
  return description === undefined ? 'Symbol()' : String(description);
}

function extraArrayProperty(keys: ArrayLike<string | symbol>, length: number, path: Path): LossyValueError {
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    if (typeof key === 'symbol') return lossy(path, `is an array with a symbol key ${symbolName(key)}, which JSON drops`);
    if (key !== 'length' && !isIndexBelow(key, length)) return lossy({ parent: path, key }, 'is a property of an array besides its elements, which JSON drops');
  }
  return lossy(path, 'is an array with properties besides its elements, which JSON drops');
}

/** Whether `key` is the canonical text of an integer below `length` (an array element's key). */
function isIndexBelow(key: string, length: number): boolean {
  if (key.length === 0 || key.length > 16 || (key.length > 1 && apply(charCodeAt, key, [0]) === 48)) return false;
  let index = 0;
  for (let at = 0; at < key.length; at++) {
    const digit = (apply(charCodeAt, key, [at]) as number) - 48;
    if (digit < 0 || digit > 9) return false;
    index = index * 10 + digit;
  }
  return index < length;
}

function formatPath(path: Path): string {
  // Iterative: a path may be thousands of levels deep.
  const keys: Array<string | number> = setPrototypeOf([], null);
  let count = 0;
  let node = path;
  while (typeof node !== 'string') {
    keys[count++] = node.key;
    node = node.parent;
  }
  let text = node;
  while (count > 0) {
    const key = keys[--count]!;
    text += typeof key === 'number' ? `[${key}]` : isIdentifier(key) ? `.${key}` : `[${stringifyString(key)}]`;
  }
  return text;
}

function isIdentifier(key: string): boolean {
  if (key.length === 0) return false;
  for (let at = 0; at < key.length; at++) {
    const unit = apply(charCodeAt, key, [at]) as number;
    const letter = (unit >= 65 && unit <= 90) || (unit >= 97 && unit <= 122) || unit === 95 || unit === 36;
    if (!letter && !(at > 0 && unit >= 48 && unit <= 57)) return false;
  }
  return true;
}

function lossy(path: Path, problem: string): LossyValueError {
  return new LossyValueError(formatPath(path), problem);
}

/** "a Map", "an Image": the constructor's name from own data properties up the prototype chain, without running program code. */
function describe(value: object): string {
  let kind = 'object';
  try {
    let proto = getPrototypeOf(value);
    for (let steps = 0; proto !== null && steps < 64; steps++) {
      const constructor = ownValue(proto, 'constructor');
      const name = typeof constructor === 'function' ? ownValue(constructor, 'name') : undefined;
      if (typeof name === 'string' && name !== '') {
        kind = name;
        break;
      }
      proto = getPrototypeOf(proto);
    }
  } catch {
    // A Proxy somewhere in the chain: keep the generic word.
  }
  if (kind === 'object' || kind === 'Object') return 'an object whose prototype is not Object.prototype';
  const first = apply(charCodeAt, kind, [0]) as number;
  return first === 65 || first === 69 || first === 73 || first === 79 || first === 85 ? `an ${kind}` : `a ${kind}`;
}

