// Notices denials the program meets even when it swallows them: errors with a denial code that
// come out of the file system, child process and socket APIs while a run is active. The host
// reports `sandbox.denied` from this and from what the run printed or returned.
import { EventEmitter } from 'node:events';
import { createRequire, syncBuiltinESMExports } from 'node:module';

const DENIAL_CODES = new Set(['EACCES', 'EROFS', 'EPERM', 'ERR_ACCESS_DENIED', 'ECONNREFUSED', 'ENETUNREACH']);
const { apply } = Reflect;
const promiseThen = Promise.prototype.then;
let denied = false;

/** Records `error` when it carries a denial code. */
function note(error: unknown): void {
  if (!denied && typeof error === 'object' && error !== null && DENIAL_CODES.has((error as { code?: unknown }).code as string)) denied = true;
}

/** Whether a denial was seen since the last call; resets the flag. */
export function takeDenied(): boolean {
  const seen = denied;
  denied = false;
  return seen;
}

/** Wraps the module functions that can fail with a denial, and watches 'error' events. Call once at start-up. */
export function watchDenials(): void {
  const require = createRequire(import.meta.url);
  for (const name of ['fs', 'fs/promises', 'child_process']) wrapExports(require(name) as Record<string, unknown>);
  syncBuiltinESMExports();
  // Streams and sockets report failures as 'error' events (a refused connection, a write stream).
  const emit = EventEmitter.prototype.emit;
  EventEmitter.prototype.emit = function (this: EventEmitter, event: string | symbol, ...args: unknown[]) {
    if (event === 'error') note(args[0]);
    return apply(emit, this, [event, ...args]) as boolean;
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
          return apply(callback, this, [error, ...results]);
        };
      }
      let result: unknown;
      try {
        result = apply(original, this, args);
      } catch (error) {
        note(error);
        throw error;
      }
      if (result instanceof Promise) {
        // A new promise with the same outcome: an unhandled rejection stays unhandled.
        return apply(promiseThen, result, [undefined, (error: unknown) => {
          note(error);
          throw error;
        }]);
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
