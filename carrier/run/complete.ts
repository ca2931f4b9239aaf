// Names for a front end's Tab (`ptc repl`): what a path such as `foo.bar.` can continue with in the
// retained environment, asked between runs. Nothing of the program runs to answer: only data
// properties are followed (a getter is not called, so `a.b` behind an accessor completes nothing),
// a Proxy is never touched (asking it for its keys or prototype would run its traps), and names are
// read from own-property lists along the prototype chain, which ordinary objects answer natively.
// The carrier's own steps use intrinsics captured at load (a program may replace Array and Set
// methods in this realm), so answering calls nothing a program put there either.
import { types } from 'node:util';
import { append, apply, getOwnPropertyDescriptor, getPrototypeOf, isArray, regexpExec, SafeSet } from '../hardening/intrinsics.ts';

const { getOwnPropertyNames } = Object;
const sort = Array.prototype.sort;
const isProxy = types.isProxy;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const isName = (value: unknown): value is string => typeof value === 'string' && value.length <= MAX_NAME_LENGTH && regexpExec(IDENTIFIER, value) !== null;

/** At most this many names in one answer, and this long each (the host checks both). */
export const MAX_NAMES = 5000;
export const MAX_NAME_LENGTH = 200;

/** How an environment answers for its top-level names. */
export interface Scope {
  /** The realm's global object. */
  global: object;
  /** Retained top-level names that are not global properties (the scoped REPL's copies). */
  names(): string[];
  /** The value of a top-level name that is not a global property; undefined when there is none. */
  lookup(name: string): { value: unknown } | undefined;
}

/** The names that can follow `path` (`[]`: the top level; `['foo', 'bar']`: `foo.bar.`), sorted, without duplicates. */
export function completeNames(scope: Scope, path: unknown): string[] {
  if (!isArray(path) || path.length > 32) return [];
  const names: string[] = [];
  for (let index = 0; index < path.length; index++) {
    const name: unknown = path[index];
    if (!isName(name)) return [];
    append(names, name);
  }
  const found = new SafeSet<string>();
  if (names.length === 0) {
    const declared = scope.names();
    for (let index = 0; index < declared.length; index++) found.add(declared[index]!);
    collect(scope.global, found);
  } else {
    const value = resolvePath(scope, names);
    if (value !== undefined) collect(value.value, found);
  }
  const answer: string[] = [];
  found.forEach((name) => {
    if (answer.length < MAX_NAMES && isName(name)) append(answer, name);
  });
  return apply(sort, answer, []) as string[];
}

function resolvePath(scope: Scope, path: string[]): { value: unknown } | undefined {
  const first = path[0]!;
  let current = dataProperty(scope.global, first);
  if (current === undefined) {
    // Not a global property: a declaration, whose lookup runs no program code, unless the global's
    // chain holds a Proxy (a name lookup would then ask its `has` trap) or an accessor for it.
    if (!plainChain(scope.global) || hasProperty(scope.global, first)) return undefined;
    current = scope.lookup(first);
  }
  for (let index = 1; index < path.length && current !== undefined; index++) current = dataProperty(current.value, path[index]!);
  return current;
}

/** `object[name]` when it is a data property somewhere on a chain of ordinary objects. */
function dataProperty(object: unknown, name: string): { value: unknown } | undefined {
  for (let at = object; isObject(at); at = getPrototypeOf(at)) {
    if (isProxy(at)) return undefined;
    const descriptor = getOwnPropertyDescriptor(at, name);
    if (descriptor === undefined) continue;
    return 'value' in descriptor ? { value: descriptor.value } : undefined;
  }
  return undefined;
}

function hasProperty(object: object, name: string): boolean {
  for (let at: unknown = object; isObject(at); at = getPrototypeOf(at)) if (getOwnPropertyDescriptor(at, name) !== undefined) return true;
  return false;
}

function plainChain(object: object): boolean {
  for (let at: unknown = object; isObject(at); at = getPrototypeOf(at)) if (isProxy(at)) return false;
  return true;
}

/** Every string key along the chain, up to the first Proxy. */
function collect(value: unknown, into: InstanceType<typeof SafeSet<string>>): void {
  for (let at = value; isObject(at); at = getPrototypeOf(at)) {
    if (isProxy(at)) return;
    const names = getOwnPropertyNames(at);
    for (let index = 0; index < names.length; index++) {
      if (into.size >= MAX_NAMES * 2) return;
      into.add(names[index]!);
    }
  }
}

function isObject(value: unknown): value is object {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}
