// Binding proxies: each host binding becomes an async global (or a method of a namespace object)
// that encodes its arguments as lossless JSON, asks the host over the control channel and
// rebuilds the reply, with Images placed where the host marked them. The call path uses only
// captured intrinsics (intrinsics.ts), so a program's tampering cannot change what is sent.
import { types } from 'node:util';
import { encodeJson, LossyValueError } from '../../wire/json.ts';
import { decodeJson } from '../../wire/decode.ts';
import { createImage, imageDescriptor } from './image.ts';
import { append, byteLength, construct, create, defineProperty, NativePromise, rejected, SafeSet, StringCtor, stringIndexOf, stringSlice, TypeErrorCtor } from '../hardening/intrinsics.ts';
import type { ImagePlacement, InvokeResult } from '../../wire/messages.ts';

const brand = Symbol.for('ptc.BindingError');
const { isProxy } = types;

/** Defines rather than assigns, so no setter (on the global or a prototype) sees the binding. */
function define(holder: object, key: string | number, value: unknown): void {
  defineProperty(holder, key, { __proto__: null, value, writable: true, configurable: true, enumerable: true } as PropertyDescriptor);
}

/** The error a program sees when a binding call fails: the host's message, the binding and its code. */
export class BindingError extends Error {
  readonly binding: string;
  readonly code: string | undefined;
  constructor(message: string, binding: string, code?: string) {
    super(message);
    this.name = 'BindingError';
    this.binding = binding;
    this.code = code;
    defineProperty(this, brand, { __proto__: null, value: true } as PropertyDescriptor);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
  }
}

interface Waiter {
  bytes: number;
  resolve: () => void;
  next: Waiter | undefined;
}

export interface BindingLimits {
  maxPendingCalls: number;
  maxMessageBytes: number;
}

export interface BindingScope {
  /** False once the evaluation that owns these calls has settled. */
  active(): boolean;
  invoke(name: string, args: string): Promise<InvokeResult>;
}

/** One evaluation's way to call its bindings: encodes, meters and sends a call of one of them. */
export type BindingCaller = (name: string, args: unknown[]) => Promise<unknown>;

/**
 * The caller of one evaluation, over the bindings it was given: its own limit of calls in flight,
 * and a call of a name it was not given (a function saved from an earlier evaluation that had it)
 * fails as a BindingError naming that binding instead of reaching the host.
 */
export function bindingCaller(names: readonly string[], scope: BindingScope, limits: BindingLimits): BindingCaller {
  const given = new SafeSet<string>();
  for (let index = 0; index < names.length; index++) given.add(names[index]!);
  let pending = 0;
  let pendingBytes = 0;
  // Calls past maxPendingCalls (or past maxMessageBytes of arguments in flight) wait here, first
  // come first served, rather than fail: `Promise.all(items.map(tool))` is what programs write,
  // the host still sees at most the limit at once, and the queue lives in the program's own heap,
  // which its heap limit bounds. A linked list of null-prototype nodes, so no Array method runs.
  const waiting: { head: Waiter | undefined; tail: Waiter | undefined } = { __proto__: null, head: undefined, tail: undefined } as never;
  const fits = (bytes: number): boolean => pending < limits.maxPendingCalls && pendingBytes + bytes <= limits.maxMessageBytes;
  const waitForSlot = (bytes: number): Promise<void> =>
    construct(NativePromise, [(resolve: () => void) => {
      const node: Waiter = { __proto__: null, bytes, resolve, next: undefined } as never;
      if (waiting.tail === undefined) waiting.head = node;
      else waiting.tail.next = node;
      waiting.tail = node;
    }]) as Promise<void>;
  const release = (bytes: number): void => {
    pending--;
    pendingBytes -= bytes;
    // Several small calls may fit where one large one was.
    for (let node = waiting.head; node !== undefined && (fits(node.bytes) || !scope.active()); node = waiting.head) {
      waiting.head = node.next;
      if (waiting.head === undefined) waiting.tail = undefined;
      pending++;
      pendingBytes += node.bytes;
      node.resolve();
    }
  };

  return async (name: string, args: unknown[]): Promise<unknown> => {
    if (!scope.active()) throw ended(name);
    if (!given.has(name)) {
      const shown = name === STEP ? 'step' : name;
      throw new BindingError(`${shown}: this evaluation has no binding ${shown}; the function calling it was kept from an earlier evaluation that had one`, shown, 'PTC_UNKNOWN_BINDING');
    }
    let text: string;
    try {
      text = encodeJson(args, 'arguments', { replaceObject: encodeImageArgument, isProxy });
    } catch (error) {
      if (error instanceof LossyValueError) throw new TypeErrorCtor(`${name}: ${(error as LossyValueError).message}`);
      throw error;
    }
    const bytes = byteLength(text);
    // Only a call that could never fit fails; the others wait their turn below.
    if (bytes > limits.maxMessageBytes) {
      throw new BindingError(`${name}: arguments of calls in flight would exceed maxMessageBytes (${limits.maxMessageBytes} bytes)`, name, 'PTC_MESSAGE_LIMIT');
    }
    if (waiting.head === undefined && fits(bytes)) {
      pending++;
      pendingBytes += bytes;
    } else {
      // wakeNext takes the slot for this call before it resumes, so two wakes cannot both take the last one.
      await waitForSlot(bytes);
      if (!scope.active()) {
        release(bytes);
        throw ended(name);
      }
    }
    let reply: InvokeResult;
    try {
      reply = await scope.invoke(name, text);
    } catch (error) {
      throw toBindingError(name, error);
    } finally {
      release(bytes);
    }
    if (typeof reply.value !== 'string') return undefined;
    return placeImages(decodeJson(reply.value), reply.images);
  };
}

function ended(name: string): BindingError {
  return new BindingError(`${name}: the evaluation that made this call has ended`, name, 'PTC_EVALUATION_ENDED');
}

/**
 * Installs one async global per binding on `target`; dotted names become namespace objects.
 * Returns an uninstaller. A proxy is not tied to the evaluation that installed it: each call goes
 * to `current()`, the caller of the evaluation the calling code belongs to while that evaluation
 * is the active one, so a function or namespace saved in a retained environment calls the current
 * evaluation's bindings; code of an ended evaluation (a timer that fires later) has none.
 */
export function installBindings(
  names: string[],
  current: () => BindingCaller | undefined,
  target: Record<string, unknown> = globalThis as unknown as Record<string, unknown>,
): () => void {
  const root = target;
  const installed: string[] = [];
  const call = (name: string, args: unknown[]): Promise<unknown> => {
    const caller = current();
    return caller === undefined ? rejected(ended(name)) : caller(name, args);
  };

  for (let index = 0; index < names.length; index++) {
    const name = names[index]!;
    if (name === STEP) {
      define(root, 'step', makeStep(call));
      append(installed, 'step');
      continue;
    }
    const parts = splitName(name);
    const leaf = parts[parts.length - 1]!;
    let holder = root;
    for (let depth = 0; depth < parts.length - 1; depth++) {
      const part = parts[depth]!;
      const next = holder[part];
      if (typeof next !== 'object' || next === null) {
        // No prototype: a member named `__proto__`, `constructor` or `toString` is just a binding.
        define(holder, part, create(null));
        if (holder === root) append(installed, part);
      }
      holder = holder[part] as Record<string, unknown>;
    }
    define(holder, leaf, { [leaf]: (...args: unknown[]) => call(name, args) }[leaf]);
    if (parts.length === 1) append(installed, leaf);
  }
  return () => {
    for (let index = 0; index < installed.length; index++) delete root[installed[index]!];
  };
}

/** The host's name for step(); not an identifier, so no binding has it. */
const STEP = '#step';

/**
 * step(name, fn): a journaled run's nondeterministic value, made once. The host answers the
 * value it journaled under `name`; when it has none, fn() makes it and the host journals it
 * before step() returns, so a resumed run gets the same value without calling fn again.
 */
function makeStep(call: (name: string, args: unknown[]) => Promise<unknown>): (name: unknown, fn: unknown) => Promise<unknown> {
  return async function step(name: unknown, fn: unknown): Promise<unknown> {
    if (typeof name !== 'string') throw new TypeErrorCtor('step(name, fn): name must be a string');
    if (typeof fn !== 'function') throw new TypeErrorCtor('step(name, fn): fn must be a function');
    const found = (await call(STEP, [name])) as { recorded: boolean; value?: unknown };
    if (found.recorded) return found.value;
    const value = await (fn as () => unknown)();
    await call(STEP, [name, value]);
    return value;
  };
}

/** `a.b.c` as its parts, without String.prototype.split. */
function splitName(name: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let dot = stringIndexOf(name, '.'); dot !== -1; dot = stringIndexOf(name, '.', start)) {
    append(parts, stringSlice(name, start, dot));
    start = dot + 1;
  }
  append(parts, stringSlice(name, start));
  return parts;
}

function encodeImageArgument(value: object): string | undefined {
  const image = imageDescriptor(value);
  return image === undefined ? undefined : encodeJson(image, 'image');
}

function toBindingError(name: string, error: unknown): BindingError {
  if (typeof error === 'object' && error !== null && !isProxy(error)) {
    const { message, code } = error as { message?: unknown; code?: unknown };
    return new BindingError(typeof message === 'string' ? message : StringCtor(message), name, typeof code === 'string' ? code : undefined);
  }
  return new BindingError(StringCtor(error), name);
}

function placeImages(value: unknown, placements: ImagePlacement[]): unknown {
  let root = value;
  for (let index = 0; index < placements.length; index++) {
    const { at, image } = placements[index]!;
    if (at.length === 0) {
      root = createImage(image);
      continue;
    }
    let parent = root as Record<string | number, unknown>;
    for (let depth = 0; depth < at.length - 1; depth++) parent = parent[at[depth]!] as Record<string | number, unknown>;
    define(parent, at[at.length - 1]!, createImage(image));
  }
  return root;
}
