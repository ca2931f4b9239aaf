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
// bounded by memory rather than by the call stack. The captured JSON.stringify writes a value only
// once every member has been proven such a property and nothing it would look up (a toJSON, a
// Proxy up a prototype chain) is there, and only 512 levels deep at most.
import { types } from 'node:util';

const stringifyString = JSON.stringify as (value: string) => string;
const stringifyValue = JSON.stringify as (value: unknown) => string;
const { isArray } = Array;
const { getPrototypeOf, setPrototypeOf, defineProperty, getOwnPropertyNames, getOwnPropertySymbols, prototype: objectPrototype } = Object;
const arrayPrototype = Array.prototype;
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
const { isProxy: isProxyObject, isDate, isRegExp, isMap, isSet, isWeakMap, isWeakSet, isBoxedPrimitive, isPromise, isNativeError, isArrayBufferView, isAnyArrayBuffer } = types;
// A JSON.rawJSON object looks like a frozen `{ rawJSON: text }` with a null prototype, but
// JSON.stringify writes its text in its place.
const isRawJson = (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON ?? (() => false);
const hasHiddenState = (value: object): boolean =>
  isRawJson(value) || isDate(value) || isRegExp(value) || isMap(value) || isSet(value) || isWeakMap(value) || isWeakSet(value) || isBoxedPrimitive(value)
  || isPromise(value) || isNativeError(value) || isArrayBufferView(value) || isAnyArrayBuffer(value);

/** True for ordinary objects whose prototype is null or a trusted realm's Object.prototype. */
export function isPlainObject(value: object): boolean {
  return hasPlainPrototype(value, getPrototypeOf(value));
}

function hasPlainPrototype(value: object, proto: object | null): boolean {
  return (proto === objectPrototype || proto === null || apply(weakSetHas, objectPrototypes, [proto])) && !hasHiddenState(value);
}

/**
 * One array or object being encoded: its keys (objects only), the next position, and how many
 * members it has written. A class rather than a null-prototype literal, which V8 keeps as a
 * dictionary: frames are read and written for every member. Its fields are defined (not assigned)
 * when it is built, so a setter a program put on Object.prototype never sees them.
 */
class Frame {
  readonly value: object;
  /** Own string keys of an object, enumerable or not; null for an array. */
  readonly keys: ArrayLike<string> | null;
  readonly length: number;
  /** A symbol key of the object, reported once its string keys are done (where ownKeys lists symbols). */
  readonly symbol: symbol | undefined;
  /** The position of the member being written, plus one: the path of a failure is read from it. */
  index = 0;
  written = 0;
  constructor(value: object, keys: ArrayLike<string> | null, length: number, symbol: symbol | undefined) {
    this.value = value;
    this.keys = keys;
    this.length = length;
    this.symbol = symbol;
  }
}

// JSON.stringify recurses on the call stack; below this depth it cannot overflow it.
const NATIVE_DEPTH = 512;

/**
 * Encodes a value as lossless JSON text, or throws LossyValueError naming the first lossy path.
 *
 * Two passes of one walk. The first proves, reading every member from its descriptor, that the
 * value is plain data that JSON.stringify writes exactly as this encoder would: then the captured
 * JSON.stringify writes it, reading only data properties already proven (no getter, Proxy or
 * toJSON left for it to meet) at native speed. A value it would write differently (a bigint, -0,
 * an integer past 2^53, an object replaceObject replaces, deep nesting) is written by the second
 * pass instead, which builds the text itself.
 */
export function encodeJson(value: unknown, root: string, options: EncodeOptions = {}): string {
  if (walk(value, root, options, false) !== undefined) {
    try {
      return stringifyValue(value);
    } catch {
      // Not expected below NATIVE_DEPTH; the writing pass gives the same text.
    }
  }
  return walk(value, root, options, true)!;
}

/**
 * One walk over an explicit stack in document order, writing into one string when `writing`.
 * Nothing is allocated per member but the descriptor that proves it a data property: the path of
 * a member is the stack itself (each frame's current key), turned into text only when something
 * fails. Without `writing`, it returns '' for a value JSON.stringify writes exactly, and undefined
 * as soon as it meets one that it would not.
 */
function walk(value: unknown, root: string, options: EncodeOptions, writing: boolean): string | undefined {
  const { replaceObject, isProxy } = options;
  const skipUndefined = options.skipUndefinedMembers === true;
  const dropZeroSign = options.dropZeroSign === true;
  const seen = new SetCtor<object>();
  // No prototype, so that storing a frame cannot reach an index setter a program put on Array.prototype.
  const stack: Frame[] = setPrototypeOf([], null);
  let depth = 0;
  let out = '';
  let item = value;
  // The last two prototypes found free of toJSON (an object's and an array's, mostly).
  let cleanA: object | null = null;
  let cleanB: object | null = null;
  const here = (): string => formatPath(root, stack, depth);

  for (;;) {
    // Write `item`: a primitive's text, or the opening of an array or object pushed as a frame.
    switch (typeof item) {
      case 'string':
        if (writing) out += stringifyString(item);
        break;
      case 'number':
        if (writing) out += numberText(item, dropZeroSign, here);
        else if (!isNativeNumber(item, dropZeroSign, here)) return undefined;
        break;
      case 'boolean':
        if (writing) out += item ? 'true' : 'false';
        break;
      case 'bigint':
        if (!writing) return undefined;
        out += apply(bigintToString, item, []);
        break;
      case 'object': {
        if (item === null) {
          if (writing) out += 'null';
          break;
        }
        const object = item;
        if (isProxy !== undefined && isProxy(object)) throw lossy(here(), 'is a Proxy, which is not plain data');
        // Only the writing pass looks for cycles: the proving pass, meeting one, repeats members it
        // has already proven until it passes NATIVE_DEPTH and leaves the value to the writing pass.
        if (writing && apply(setHas, seen, [object])) throw lossy(here(), 'is a circular reference');
        const proto = getPrototypeOf(object);
        const frame = openFrame(object, proto, here, replaceObject, writing);
        if (frame === null) return undefined;
        if (typeof frame === 'string') {
          out += frame;
          break;
        }
        if (!writing) {
          if (depth === NATIVE_DEPTH) return undefined;
          if (proto !== cleanA && proto !== cleanB) {
            if (!noInheritedToJson(proto)) return undefined;
            cleanB = cleanA;
            cleanA = proto;
          }
        }
        if (writing) apply(setAdd, seen, [object]);
        stack[depth++] = frame;
        if (writing) out += frame.keys === null ? '[' : '{';
        break;
      }
      case 'undefined':
        throw lossy(here(), 'is undefined, which JSON drops');
      case 'function':
        throw lossy(here(), 'is a function, which JSON cannot represent');
      case 'symbol':
        throw lossy(here(), 'is a symbol, which JSON cannot represent');
    }

    // Find the next item: the next member of the innermost open frame, closing the finished ones.
    for (;;) {
      if (depth === 0) return out;
      const frame = stack[depth - 1]!;
      if (frame.index === frame.length) {
        if (frame.symbol !== undefined) throw lossy(formatPath(root, stack, depth - 1), `has a symbol key ${symbolName(frame.symbol)}, which JSON drops`);
        if (writing) out += frame.keys === null ? ']' : '}';
        if (writing) apply(setDelete, seen, [frame.value]);
        stack[--depth] = undefined as never;
        continue;
      }
      const index = frame.index++;
      const keys = frame.keys;
      if (keys === null) {
        const descriptor = getOwnPropertyDescriptor(frame.value, index);
        if (descriptor === undefined) throw lossy(here(), 'is a hole in a sparse array');
        item = dataValue(descriptor, here);
        if (writing && index > 0) out += ',';
        break;
      }
      const key = keys[index]!;
      item = dataValue(getOwnPropertyDescriptor(frame.value, key)!, here);
      if (item === undefined && skipUndefined) continue;
      if (writing) {
        out += frame.written++ === 0 ? stringifyString(key) : `,${stringifyString(key)}`;
        out += ':';
      }
      break;
    }
  }
}

/** Whether JSON.stringify would find no toJSON up this prototype chain, nor a Proxy whose trap it would run. */
function noInheritedToJson(proto: object | null): boolean {
  for (let steps = 0; proto !== null; steps++) {
    if (steps === 64 || isProxyObject(proto) || getOwnPropertyDescriptor(proto, 'toJSON') !== undefined) return false;
    proto = getPrototypeOf(proto);
  }
  return true;
}

/** Whether JSON.stringify writes a number as numberText does; throws for one JSON cannot hold. */
function isNativeNumber(value: number, dropZeroSign: boolean, here: () => string): boolean {
  if (!isFiniteNumber(value)) throw lossy(here(), `is ${apply(numberToString, value, [])}, which JSON cannot represent`);
  if (value === 0) return dropZeroSign || 1 / value > 0;
  return !isIntegerNumber(value) || isSafeIntegerNumber(value);
}

/** JSON text of a finite number; -0 keeps its sign unless dropped. */
function numberText(value: number, dropZeroSign: boolean, here: () => string): string {
  if (!isFiniteNumber(value)) throw lossy(here(), `is ${apply(numberToString, value, [])}, which JSON cannot represent`);
  // -0 keeps its sign, and an integer beyond 2^53 is written with an exponent: as plain digits
  // decodeJson would read it back as a bigint (and, from toString's rounded digits, a different one).
  if (value === 0) return 1 / value < 0 && !dropZeroSign ? '-0' : '0';
  if (isIntegerNumber(value) && !isSafeIntegerNumber(value)) return apply(numberToExponential, value, []);
  return apply(numberToString, value, []);
}

/**
 * A frame for a plain array or object, the replacement text for another object, or a
 * LossyValueError; null for another object when `replace` is false and replaceObject could replace it.
 */
function openFrame(object: object, proto: object | null, here: () => string, replaceObject: EncodeOptions['replaceObject'], replace: boolean): Frame | string | null {
  if (isArray(object)) {
    if (proto !== arrayPrototype && !apply(weakSetHas, arrayPrototypes, [proto])) {
      throw lossy(here(), `is ${describe(object)}, an array with another prototype than Array.prototype, which JSON does not keep`);
    }
    const length = (object as unknown[]).length;
    const keys = ownKeys(object);
    // Index keys come first and number at most `length`; with 'length' itself, anything more is extra.
    if (keys.length > length + 1) throw extraArrayProperty(keys, length, here());
    return new Frame(object, null, length, undefined);
  }
  if (!hasPlainPrototype(object, proto)) {
    if (replaceObject !== undefined) {
      if (!replace) return null;
      const replaced = replaceObject(object, here());
      if (replaced !== undefined) return replaced;
    }
    if (isRawJson(object)) throw lossy(here(), 'is a JSON.rawJSON object, whose text JSON.stringify would write in its place');
    if (proto === null || apply(weakSetHas, objectPrototypes, [proto])) {
      throw lossy(here(), 'is an object with internal state (a Date, Map, Set, buffer, error or boxed primitive under Object.prototype), which JSON drops');
    }
    throw lossy(here(), `is ${describe(object)}, which is not plain JSON data`);
  }
  // Names and symbols apart: two lists that V8 builds faster than ownKeys' one.
  const keys = getOwnPropertyNames(object);
  const symbols = getOwnPropertySymbols(object);
  return new Frame(object, keys, keys.length, symbols.length === 0 ? undefined : symbols[0]);
}

/** The value of an own property, which must be an enumerable data property: no getter runs. */
function dataValue(descriptor: PropertyDescriptor, here: () => string): unknown {
  if (!hasOwn(descriptor, 'value')) throw lossy(here(), 'is an accessor property (a getter or setter), which is not plain data');
  if (!descriptor.enumerable) throw lossy(here(), 'is a non-enumerable property, which JSON drops');
  return descriptor.value;
}

/** A symbol key as a message names it: its description, or `Symbol()` for one without (not "undefined"). */
function symbolName(key: symbol): string {
  const description = key.description;
  return description === undefined ? 'Symbol()' : String(description);
}

function extraArrayProperty(keys: ArrayLike<string | symbol>, length: number, path: string): LossyValueError {
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    if (typeof key === 'symbol') return lossy(path, `is an array with a symbol key ${symbolName(key)}, which JSON drops`);
    if (key !== 'length' && !isIndexBelow(key, length)) return lossy(`${path}${keyText(key)}`, 'is a property of an array besides its elements, which JSON drops');
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

/** The path of the member each of the first `depth` frames is at, below `root`: built only for a message. */
function formatPath(root: string, stack: readonly Frame[], depth: number): string {
  let text = root;
  for (let at = 0; at < depth; at++) {
    const frame = stack[at]!;
    text += keyText(frame.keys === null ? frame.index - 1 : frame.keys[frame.index - 1]!);
  }
  return text;
}

function keyText(key: string | number): string {
  return typeof key === 'number' ? `[${key}]` : isIdentifier(key) ? `.${key}` : `[${stringifyString(key)}]`;
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

function lossy(path: string, problem: string): LossyValueError {
  return new LossyValueError(path, problem);
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

