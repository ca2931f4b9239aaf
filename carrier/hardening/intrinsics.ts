// The built-ins the carrier's own code uses while a program runs, captured when this module loads,
// before any program exists in the process (Node's primordials, vitest's init-forks). A program
// can replace Array.prototype.push, Function.prototype.apply, globalThis.Promise or a getter on
// Object.prototype in its realm, and it can reach this realm through any object the carrier lends
// it (process, a binding's promise, inspect); none of that may change what the carrier does.
//
// Rules for carrier code on a program's path (binding call, output, completion, thrown values):
// call methods through these captures, never `x.method()` on a built-in prototype; no spread,
// for-of or array destructuring over arrays (they use Array.prototype[Symbol.iterator]); build
// objects with literals and descriptors with `__proto__: null` (assignment and descriptor reads
// walk Object.prototype, where a program may have put a setter or a `get`); never let a native
// promise resolve with an object that has Object.prototype (resolution looks up its `then`).

const ReflectApply = Reflect.apply;

/** `method` as a function of its receiver: uncurry(String.prototype.slice)(text, 1). */
function uncurry<This, Args extends unknown[], Result>(method: (this: This, ...args: Args) => Result): (self: This, ...args: Args) => Result {
  return (self, ...args) => ReflectApply(method, self, args);
}

export const { apply, construct, defineProperty, deleteProperty, getOwnPropertyDescriptor, getPrototypeOf, ownKeys } = Reflect;
/** Object.setPrototypeOf, which returns the object (Reflect's returns a boolean). */
export const { create, freeze, hasOwn, setPrototypeOf } = Object;
export const ObjectPrototype = Object.prototype;
export const ErrorCtor = Error;
export const TypeErrorCtor = TypeError;
export const StringCtor = String;
export const NumberCtor = Number;
export const { isArray } = Array;

// ---------------------------------------------------------------- strings
// Only methods that take no pattern object: split, replace and match look up Symbol.split and
// friends on their (primitive) argument's String.prototype.
export const stringSlice = uncurry(String.prototype.slice as (this: string, start?: number, end?: number) => string);
export const stringIndexOf = uncurry(String.prototype.indexOf as (this: string, search: string, position?: number) => number);
export const stringLastIndexOf = uncurry(String.prototype.lastIndexOf as (this: string, search: string, position?: number) => number);
export const stringIncludes = uncurry(String.prototype.includes as (this: string, search: string, position?: number) => boolean);
export const stringStartsWith = uncurry(String.prototype.startsWith as (this: string, search: string, position?: number) => boolean);
export const stringCharCodeAt = uncurry(String.prototype.charCodeAt as (this: string, index: number) => number);
export const stringTrimEnd = uncurry(String.prototype.trimEnd as (this: string) => string);
export const stringRepeat = uncurry(String.prototype.repeat as (this: string, count: number) => string);
/** RegExp.prototype.exec itself, so `test` (which looks up `exec`) is never involved. */
export const regexpExec = uncurry(RegExp.prototype.exec as (this: RegExp, text: string) => RegExpExecArray | null);

/** Lines of `text` split at '\n', without String.prototype.split. */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (;;) {
    const end = stringIndexOf(text, '\n', start);
    append(lines, end === -1 ? stringSlice(text, start) : stringSlice(text, start, end));
    if (end === -1) return lines;
    start = end + 1;
  }
}

// ---------------------------------------------------------------- arrays

/** Appends without Array.prototype.push, and without meeting a setter a program put on an index. */
export function append<T>(array: T[], item: T): void {
  defineProperty(array, array.length, { __proto__: null, value: item, writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
}

/** `items` joined by `separator`, by string concatenation. */
export function join(items: ArrayLike<string>, separator: string): string {
  let text = '';
  for (let index = 0; index < items.length; index++) text += index === 0 ? items[index]! : `${separator}${items[index]!}`;
  return text;
}

// ---------------------------------------------------------------- collections
// Subclasses whose prototypes hold their own copies of the methods and are frozen: a program that
// replaces Set.prototype.add changes nothing here, and it never holds one of these to change.

function safeCollection<C extends new (...args: never[]) => object>(Base: C, methods: string[]): C {
  const Safe = class extends (Base as new () => object) {} as unknown as C;
  for (const name of methods) {
    const descriptor = getOwnPropertyDescriptor(Base.prototype, name)!;
    defineProperty(Safe.prototype, name, { __proto__: null, ...descriptor } as PropertyDescriptor);
  }
  freeze(Safe.prototype);
  freeze(Safe);
  return Safe;
}

/** A Set whose has/add/delete/clear/size/forEach cannot be replaced by a program. */
export const SafeSet = safeCollection(Set, ['has', 'add', 'delete', 'clear', 'size', 'forEach']);
/** A Map whose get/set/has/delete/clear/size/forEach cannot be replaced by a program. */
export const SafeMap = safeCollection(Map, ['get', 'set', 'has', 'delete', 'clear', 'size', 'forEach']);
/** A WeakMap whose get/set/has/delete cannot be replaced by a program. */
export const SafeWeakMap = safeCollection(WeakMap, ['get', 'set', 'has', 'delete']);
/** A WeakSet whose has/add/delete cannot be replaced by a program. */
export const SafeWeakSet = safeCollection(WeakSet, ['has', 'add', 'delete']);

// ---------------------------------------------------------------- promises

export const NativePromise = Promise;
const promiseThen = Promise.prototype.then;
const promiseResolve = Promise.resolve;
const promiseReject = Promise.reject;

/** promise.then(onFulfilled, onRejected) with the original `then`, for any native promise. */
export function then<T, R = void>(promise: Promise<T>, onFulfilled?: (value: T) => R, onRejected?: (reason: unknown) => R): Promise<Awaited<R>> {
  return apply(promiseThen, promise, [onFulfilled, onRejected]) as Promise<Awaited<R>>;
}

/** Promise.resolve(value), which returns a native promise as it is. */
export function resolved<T>(value: T): Promise<Awaited<T>> {
  return apply(promiseResolve, NativePromise, [value]) as Promise<Awaited<T>>;
}

/** Promise.reject(reason). */
export function rejected<T = never>(reason: unknown): Promise<T> {
  return apply(promiseReject, NativePromise, [reason]) as Promise<T>;
}

/** `value` without a prototype, so that promise resolution finds no inherited `then` on it. */
export function unthenable<T extends object>(value: T): T {
  return setPrototypeOf(value, null) as T;
}

// ---------------------------------------------------------------- Node

export const byteLength = Buffer.byteLength;
export const bufferFrom = Buffer.from.bind(Buffer) as typeof Buffer.from;
export const nextTick = process.nextTick;
export const queueTask = queueMicrotask;
export const chdir = process.chdir.bind(process);

// ---------------------------------------------------------------- pristine sections
// Third-party code the carrier runs between programs (acorn and the await lowering compiling the
// next program) calls built-ins the ordinary way. Compiling runs no program code, so for its
// duration the built-ins are put back as they were when this module loaded, and the program's
// changes are restored afterwards, unseen by it.

const PRISTINE_OBJECTS: object[] = [
  Object, Object.prototype, Array, Array.prototype, Function.prototype, String, String.prototype, Number, Number.prototype,
  Boolean.prototype, Symbol, Symbol.prototype, BigInt, BigInt.prototype, RegExp, RegExp.prototype, Error, Error.prototype,
  Map.prototype, Set.prototype, WeakMap.prototype, WeakSet.prototype, Promise, Promise.prototype, Reflect, JSON, Math,
  getPrototypeOf([][Symbol.iterator]()) as object, getPrototypeOf(getPrototypeOf([][Symbol.iterator]()) as object) as object,
  getPrototypeOf(new Map()[Symbol.iterator]()) as object, getPrototypeOf(new Set()[Symbol.iterator]()) as object,
  getPrototypeOf(''[Symbol.iterator]()) as object,
];

/** The standard globals the compilers look up by name; the global object's other members are left alone. */
const PRISTINE_GLOBALS = [
  'Object', 'Array', 'Function', 'String', 'Number', 'Boolean', 'Symbol', 'BigInt', 'Error', 'TypeError', 'RangeError', 'SyntaxError',
  'ReferenceError', 'Map', 'Set', 'WeakMap', 'WeakSet', 'Promise', 'Proxy', 'Reflect', 'JSON', 'Math', 'RegExp', 'Date', 'parseInt',
  'parseFloat', 'isNaN', 'isFinite', 'Uint8Array', 'Uint16Array', 'Uint32Array', 'Int32Array', 'ArrayBuffer', 'DataView',
];

class Snapshot {
  readonly object: object;
  readonly keys: Array<string | symbol>;
  /** The descriptor of each key when this module loaded; undefined where the key was absent. */
  readonly kept: Array<Kept | undefined>;
  /** The keys as a set, for finding members the program added; null where those stay (the global object holds the program's own globals). */
  readonly original: Set<string | symbol> | null;
  constructor(object: object, keys: Array<string | symbol>, kept: Array<Kept | undefined>, original: Set<string | symbol> | null) {
    this.object = object;
    this.keys = keys;
    this.kept = kept;
    this.original = original;
  }
}

/**
 * A descriptor as loaded, its fields read once, so each section compares without walking any
 * prototype. A class, not a null-prototype literal: V8 keeps those as dictionaries, and this is
 * read hundreds of times per program.
 */
class Kept {
  readonly accessor: boolean;
  readonly value: unknown;
  readonly get: unknown;
  readonly set: unknown;
  readonly writable: unknown;
  readonly enumerable: unknown;
  readonly configurable: unknown;
  /** The same as a null-prototype descriptor, to put back. */
  readonly descriptor: PropertyDescriptor;
  constructor(descriptor: PropertyDescriptor) {
    this.accessor = !hasOwn(descriptor, 'value');
    this.value = field(descriptor, 'value');
    this.get = field(descriptor, 'get');
    this.set = field(descriptor, 'set');
    this.writable = field(descriptor, 'writable');
    this.enumerable = field(descriptor, 'enumerable');
    this.configurable = field(descriptor, 'configurable');
    this.descriptor = { __proto__: null, ...descriptor } as PropertyDescriptor;
  }
}

const snapshots: Snapshot[] = [];
function snapshot(object: object, keys: Array<string | symbol>, removeAdded: boolean): void {
  const kept: Array<Kept | undefined> = [];
  const original = removeAdded ? new SafeSet<string | symbol>() : null;
  for (let at = 0; at < keys.length; at++) {
    const descriptor = getOwnPropertyDescriptor(object, keys[at]!);
    original?.add(keys[at]!);
    append(kept, descriptor === undefined ? undefined : new Kept(descriptor));
  }
  append(snapshots, new Snapshot(object, keys, kept, original));
}
snapshot(globalThis, PRISTINE_GLOBALS, false);
for (let index = 0; index < PRISTINE_OBJECTS.length; index++) snapshot(PRISTINE_OBJECTS[index]!, ownKeys(PRISTINE_OBJECTS[index]!), true);

/** A descriptor's own field: an absent one must not be read through Object.prototype, where the program may have put a getter. */
function field(descriptor: PropertyDescriptor, key: keyof PropertyDescriptor): unknown {
  return hasOwn(descriptor, key) ? descriptor[key] : undefined;
}

/**
 * Whether `current`, from getOwnPropertyDescriptor, describes the property as it was loaded. Such
 * a descriptor holds every field of its kind (value and writable, or get and set; enumerable and
 * configurable) as its own data properties, so once its kind is known no read reaches its prototype.
 */
function unchanged(current: PropertyDescriptor | undefined, kept: Kept): boolean {
  if (current === undefined || hasOwn(current, 'value') === kept.accessor) return false;
  if (current.enumerable !== kept.enumerable || current.configurable !== kept.configurable) return false;
  return kept.accessor ? current.get === kept.get && current.set === kept.set : current.value === kept.value && current.writable === kept.writable;
}

function sameKeys(a: ArrayLike<string | symbol>, b: ArrayLike<string | symbol>): boolean {
  for (let at = 0; at < a.length; at++) if (a[at] !== b[at]) return false;
  return true;
}

/** A change to undo when a pristine section ends: the program's descriptor, or undefined where it had none. */
interface Change {
  readonly object: object;
  readonly key: string | symbol;
  readonly programs: PropertyDescriptor | undefined;
}

/** Runs `work` (which must not run program code) with the built-ins as they were before any program. */
export function withPristineBuiltins<T>(work: () => T): T {
  const changes: Change[] = [];
  for (let index = 0; index < snapshots.length; index++) {
    const { object, keys, kept, original } = snapshots[index]!;
    for (let at = 0; at < keys.length; at++) {
      const loaded = kept[at];
      if (loaded === undefined) continue;
      const key = keys[at]!;
      const current = getOwnPropertyDescriptor(object, key);
      if (unchanged(current, loaded)) continue;
      if (current !== undefined && field(current, 'configurable') !== true) continue;
      if (defineProperty(object, key, { __proto__: null, ...loaded.descriptor } as PropertyDescriptor)) {
        append(changes, { __proto__: null, object, key, programs: current } as Change);
      }
    }
    if (original === null) continue;
    const now = ownKeys(object);
    // Own keys keep their order: the same list as loaded means nothing was added.
    if (now.length === keys.length && sameKeys(now, keys)) continue;
    for (let at = 0; at < now.length; at++) {
      const key = now[at]!;
      if (original.has(key)) continue;
      const added = getOwnPropertyDescriptor(object, key)!;
      if (field(added, 'configurable') === true && deleteProperty(object, key)) append(changes, { __proto__: null, object, key, programs: added } as Change);
    }
  }
  if (changes.length === 0) return work();
  try {
    return work();
  } finally {
    for (let index = changes.length - 1; index >= 0; index--) {
      const { object, key, programs } = changes[index]!;
      if (programs === undefined) deleteProperty(object, key);
      else defineProperty(object, key, { __proto__: null, ...programs } as PropertyDescriptor);
    }
  }
}
