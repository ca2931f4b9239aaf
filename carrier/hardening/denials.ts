// Notices denials the program meets even when it swallows them: errors with a denial code that
// come out of the file system, child process and socket APIs while a run is active. The host
// reports `sandbox.denied` from this and from what the run printed or returned.
import { EventEmitter } from 'node:events';
import { syncBuiltinESMExports } from 'node:module';
import { types } from 'node:util';
import { append, apply, defineProperty, getOwnPropertyDescriptor, SafeSet, stringIncludes, then } from './intrinsics.ts';
import { requireBuiltin } from './builtins.ts';

const DENIAL_CODES = new SafeSet(['EACCES', 'EROFS', 'EPERM', 'ERR_ACCESS_DENIED', 'ECONNREFUSED', 'ENETUNREACH']);
const { isPromise } = types;
let denied = false;
/** Appended to ENETUNREACH and ECONNREFUSED messages of IP connections under a network allowlist (network-forward.ts). */
let unreachableHint: string | undefined;

/** Makes every unreachable or refused IP connection the program meets say why. */
export function explainUnreachable(hint: string): void {
  unreachableHint = hint;
}

/** Records `error` when it carries a denial code. */
function note(error: unknown): void {
  if ((denied && unreachableHint === undefined) || typeof error !== 'object' || error === null || types.isProxy(error)) return;
  try {
    const code = (error as { code?: unknown }).code;
    if (DENIAL_CODES.has(code as string)) denied = true;
    if ((code === 'ENETUNREACH' || code === 'ECONNREFUSED') && unreachableHint !== undefined) explain(error);
  } catch {
    // A `code` getter that throws is the program's; it is not a denial.
  }
}

function explain(error: object): void {
  // Only a connection to an IP address: a refused Unix socket has a path there.
  const address = getOwnPropertyDescriptor(error, 'address')?.value;
  if (typeof address !== 'string' || stringIncludes(address, '/')) return;
  const descriptor = getOwnPropertyDescriptor(error, 'message');
  const message = descriptor?.value;
  if (typeof message !== 'string' || descriptor?.writable !== true || stringIncludes(message, unreachableHint!)) return;
  defineProperty(error, 'message', { __proto__: null, value: message + unreachableHint!, writable: true, configurable: true, enumerable: false } as PropertyDescriptor);
}

/** Records a denial the carrier itself made (permission-gaps.ts refuses APIs the model misses). */
export function markDenied(): void {
  denied = true;
}

/** Whether a denial was seen since the last call; resets the flag. */
export function takeDenied(): boolean {
  const seen = denied;
  denied = false;
  return seen;
}

/** Wraps the module functions that can fail with a denial, and watches 'error' events. Call once at start-up. */
export function watchDenials(): void {
  for (const name of ['fs', 'fs/promises', 'child_process']) wrapExports(requireBuiltin(name) as Record<string, unknown>);
  syncBuiltinESMExports();
  // Streams and sockets report failures as 'error' events (a refused connection, a write stream).
  // The control socket's data events pass through here too, so no spread (it would iterate with
  // the program's Array.prototype[Symbol.iterator]).
  // `arguments` passes the event and its arguments on as they came, with no array built per event.
  const emit = EventEmitter.prototype.emit;
  EventEmitter.prototype.emit = function (this: EventEmitter, event: string | symbol) {
    if (event === 'error') note(arguments[1]);
    const descriptor = getOwnPropertyDescriptor(FunctionPrototype, 'apply');
    if (descriptor === undefined || descriptor.value === nativeApply || !descriptor.configurable) return apply(emit, this, arguments) as boolean;
    const self = this;
    const args = arguments;
    return withNativeApply(descriptor, () => apply(emit, self, args) as boolean);
  };
}

function wrapExports(exports: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(exports)) {
    // Lower-case functions only: classes (ReadStream, Dirent) must stay constructible.
    if (typeof value !== 'function' || !/^[a-z]/.test(name)) continue;
    const original = value as (...args: unknown[]) => unknown;
    const wrapped = function (this: unknown, ...args: unknown[]): unknown {
      const last = args.length - 1;
      if (last >= 0 && typeof args[last] === 'function') {
        const callback = args[last] as (...results: unknown[]) => unknown;
        args[last] = function (this: unknown, error: unknown, ...results: unknown[]) {
          note(error);
          return apply(callback, this, prepend(error, results));
        };
      }
      let result: unknown;
      try {
        result = apply(original, this, args);
      } catch (error) {
        note(error);
        throw error;
      }
      if (isPromise(result)) {
        // A new promise with the same outcome: an unhandled rejection stays unhandled.
        return then(result as Promise<unknown>, undefined, (error: unknown) => {
          note(error);
          throw error;
        });
      }
      return result;
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    for (const key of Reflect.ownKeys(original)) {
      if (key !== 'length' && key !== 'name' && key !== 'prototype') {
        const descriptor = Reflect.getOwnPropertyDescriptor(original, key);
        if (descriptor !== undefined) Object.defineProperty(wrapped, key, descriptor);
      }
    }
    exports[name] = wrapped;
  }
}

/** [first, ...rest] without the array iterator. */
function prepend(first: unknown, rest: unknown[]): unknown[] {
  const args: unknown[] = [first];
  // append: an assignment past the end would meet a setter a program put on Object.prototype['1'].
  for (let index = 0; index < rest.length; index++) append(args, rest[index]);
  return args;
}

const FunctionPrototype = Function.prototype;
const nativeApply = FunctionPrototype.apply;

/**
 * Runs `dispatch` with the original Function.prototype.apply in place. Node 22+ calls listeners
 * with `handler.apply(this, args)`, so a program that replaced `apply` would break every event in
 * the process, the control socket's included; its replacement (`descriptor`) is put back as soon
 * as the event has been dispatched.
 */
function withNativeApply<T>(descriptor: PropertyDescriptor, dispatch: () => T): T {
  defineProperty(FunctionPrototype, 'apply', { __proto__: null, value: nativeApply, writable: true, configurable: true } as PropertyDescriptor);
  try {
    return dispatch();
  } finally {
    defineProperty(FunctionPrototype, 'apply', { __proto__: null, ...descriptor } as PropertyDescriptor);
  }
}
