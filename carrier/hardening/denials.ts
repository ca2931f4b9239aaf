// Notices denials the program meets even when it swallows them: errors with a denial code that
// come out of the file system, child process and socket APIs while a run is active. The host
// reports `sandbox.denied` from this and from what the run printed or returned.
import { EventEmitter } from 'node:events';
import { syncBuiltinESMExports } from 'node:module';
import { resolve as resolvePath } from 'node:path';
import { types } from 'node:util';
import { append, apply, defineProperty, getOwnPropertyDescriptor, SafeSet, SafeWeakSet, stringIncludes, stringIndexOf, stringSlice, stringStartsWith, then } from './intrinsics.ts';
import { requireBuiltin } from './builtins.ts';
import { hiddenPathText, networkOffText, permissionDenialText, readOnlyPathText } from './denial-text.ts';
import { hiddenFromHost, inFreshRoot, networkOff, readSandboxView } from './sandbox-view.ts';

const DENIAL_CODES = new SafeSet(['EACCES', 'EROFS', 'EPERM', 'ERR_ACCESS_DENIED', 'ECONNREFUSED', 'ENETUNREACH']);
const { isPromise } = types;
let denied = false;
/** Paths the run met ENOENT for that lie outside what bubblewrap shows of the host: the host tells whether they exist there. */
let hidden: string[] = [];
let seenHidden = new SafeSet<string>();
/** At most this many hidden paths go to the host per run: one is enough to tell, a few name what to allow. */
const HIDDEN_LIMIT = 8;
/** Marks an error whose message already says why, so an error seen twice (thrown, then emitted) is explained once. */
const explained = new SafeWeakSet<object>();
/** Appended to ENETUNREACH and ECONNREFUSED messages of IP connections under a network allowlist (network-forward.ts). */
let unreachableHint: string | undefined;

/** Makes every unreachable or refused IP connection the program meets say why. */
export function explainUnreachable(hint: string): void {
  unreachableHint = hint;
}

/** Records `error` when it carries a denial code, and makes a sandbox's refusal say what was refused and what would allow it. */
function note(error: unknown): void {
  if (typeof error !== 'object' || error === null || types.isProxy(error) || explained.has(error)) return;
  try {
    const code = (error as { code?: unknown }).code;
    if (DENIAL_CODES.has(code as string)) denied = true;
    if ((code === 'ENETUNREACH' || code === 'ECONNREFUSED') && unreachableHint !== undefined) explain(error);
    else if (code === 'ERR_ACCESS_DENIED') explainPermission(error);
    else if (code === 'ENOENT') explainHidden(error);
    else if (code === 'EROFS') explainReadOnly(error);
    else if ((code === 'EAI_AGAIN' || code === 'ENETUNREACH') && unreachableHint === undefined && networkOff()) explainOffline(error);
  } catch {
    // A `code` getter that throws is the program's; it is not a denial.
  }
}

/** An own data property of a Node error (never a program's getter). */
function own(error: object, key: string): unknown {
  const descriptor = getOwnPropertyDescriptor(error, key);
  return descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined;
}

/** Replaces (or, with `suffix`, extends) the error's message, and the first line of a stack already made from it. */
function rewrite(error: object, text: string, suffix: boolean): void {
  const descriptor = getOwnPropertyDescriptor(error, 'message');
  const message = descriptor?.value;
  if (typeof message !== 'string' || descriptor?.writable !== true) return;
  const next = suffix ? message + text : text;
  defineProperty(error, 'message', { __proto__: null, value: next, writable: true, configurable: true, enumerable: false } as PropertyDescriptor);
  const stack = own(error, 'stack');
  const start = typeof stack === 'string' ? stringIndexOf(stack, message) : -1;
  if (start !== -1) {
    defineProperty(error, 'stack', { __proto__: null, value: stringSlice(stack as string, 0, start) + next + stringSlice(stack as string, start + message.length), writable: true, configurable: true, enumerable: false } as PropertyDescriptor);
  }
  explained.add(error);
}

// Node's permission model: its `permission` and `resource` fields name what was refused.
function explainPermission(error: object): void {
  const permission = own(error, 'permission');
  const resource = own(error, 'resource');
  const hostname = own(error, 'hostname');
  const message = own(error, 'message');
  // A refused connection carries no `permission`; Node's message names its --allow-net.
  const network = typeof hostname === 'string' || (typeof message === 'string' && stringIncludes(message, '--allow-net'));
  if (typeof permission !== 'string' && !network) return;
  const address = own(error, 'address');
  const text = permissionDenialText(
    typeof permission === 'string' ? permission : undefined,
    typeof resource === 'string' ? resource : undefined,
    typeof hostname === 'string' ? hostname : undefined,
    typeof address === 'string' ? address : undefined,
  );
  if (text !== undefined) rewrite(error, text, false);
}

// bubblewrap: a path in none of the directories bound from the host reads as missing.
function explainHidden(error: object): void {
  const path = own(error, 'path');
  const syscall = own(error, 'syscall');
  if (typeof path !== 'string' || path === '') return;
  // A command name looked up on PATH is not a path the program chose.
  if (typeof syscall === 'string' && stringStartsWith(syscall, 'spawn') && !stringStartsWith(path, '/')) return;
  const absolute = resolvePath(path);
  if (!hiddenFromHost(absolute)) return;
  rewrite(error, hiddenPathText(absolute), true);
  if (hidden.length < HIDDEN_LIMIT && !seenHidden.has(absolute)) {
    seenHidden.add(absolute);
    append(hidden, absolute);
  }
}

// bubblewrap: every directory bound from the host but the workspace and writable roots is read-only.
function explainReadOnly(error: object): void {
  const path = own(error, 'path');
  if (!inFreshRoot() || typeof path !== 'string' || path === '') return;
  rewrite(error, readOnlyPathText(resolvePath(path)), true);
}

// bubblewrap without the network: names do not resolve and addresses are unreachable, by design.
function explainOffline(error: object): void {
  const hostname = own(error, 'hostname');
  const address = own(error, 'address');
  denied = true;
  rewrite(error, networkOffText(typeof hostname === 'string' ? hostname : typeof address === 'string' ? address : undefined), true);
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

/** The hidden paths met since the last call (see `hidden`); resets the list. */
export function takeHidden(): string[] {
  const seen = hidden;
  hidden = [];
  seenHidden = new SafeSet<string>();
  return seen;
}

/** Wraps the module functions that can fail with a denial, and watches 'error' events. Call once at start-up. */
export function watchDenials(): void {
  readSandboxView();
  // dns too: a refused or impossible lookup rejects there without an 'error' event.
  for (const name of ['fs', 'fs/promises', 'child_process', 'dns', 'dns/promises']) wrapExports(requireBuiltin(name) as Record<string, unknown>);
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
