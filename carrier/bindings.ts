// Binding proxies: each host binding becomes an async global (or a method of a namespace object)
// that encodes its arguments as lossless JSON, asks the host over the control channel and
// rebuilds the reply, with Images placed where the host marked them.
import { types } from 'node:util';
import { decodeJson, encodeJson, LossyValueError } from './protocol/json.ts';
import { createImage, imageDescriptor } from './image.ts';
import type { ImagePlacement, InvokeResult } from './protocol/messages.ts';

const brand = Symbol.for('ptc.BindingError');
const { defineProperty, create } = Object;

/** Defines rather than assigns, so no setter (on the global or a prototype) sees the binding. */
function define(holder: object, key: string, value: unknown): void {
  defineProperty(holder, key, { value, writable: true, configurable: true, enumerable: true });
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
    defineProperty(this, brand, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
  }
}

export interface BindingLimits {
  maxPendingCalls: number;
  maxMessageBytes: number;
}

export interface BindingScope {
  /** False once the evaluation that owns these proxies has settled. */
  active(): boolean;
  invoke(name: string, args: string): Promise<InvokeResult>;
}

/** Installs one async global per binding on `target`; dotted names become namespace objects. Returns an uninstaller. */
export function installBindings(
  names: string[],
  scope: BindingScope,
  limits: BindingLimits,
  target: Record<string, unknown> = globalThis as unknown as Record<string, unknown>,
): () => void {
  const root = target;
  let pending = 0;
  let pendingBytes = 0;
  const installed: string[] = [];

  const call = async (name: string, args: unknown[]): Promise<unknown> => {
    if (!scope.active()) throw new BindingError(`${name}: the evaluation that made this call has ended`, name, 'PTC_EVALUATION_ENDED');
    let text: string;
    try {
      text = encodeJson(args, 'arguments', { replaceObject: encodeImageArgument, isProxy: types.isProxy });
    } catch (error) {
      if (error instanceof LossyValueError) throw new TypeError(`${name}: ${error.message}`);
      throw error;
    }
    const bytes = Buffer.byteLength(text);
    if (pending >= limits.maxPendingCalls) {
      throw new BindingError(`${name}: too many binding calls in flight (maxPendingCalls is ${limits.maxPendingCalls})`, name, 'PTC_PENDING_LIMIT');
    }
    if (pendingBytes + bytes > limits.maxMessageBytes) {
      throw new BindingError(`${name}: arguments of calls in flight would exceed maxMessageBytes (${limits.maxMessageBytes} bytes)`, name, 'PTC_MESSAGE_LIMIT');
    }
    pending++;
    pendingBytes += bytes;
    let reply: InvokeResult;
    try {
      reply = await scope.invoke(name, text);
    } catch (error) {
      throw toBindingError(name, error);
    } finally {
      pending--;
      pendingBytes -= bytes;
    }
    if (typeof reply.value !== 'string') return undefined;
    return placeImages(decodeJson(reply.value), reply.images);
  };

  for (const name of names) {
    const parts = name.split('.');
    const leaf = parts.pop()!;
    let holder = root;
    for (const part of parts) {
      const next = holder[part];
      if (typeof next !== 'object' || next === null) {
        // No prototype: a member named `__proto__`, `constructor` or `toString` is just a binding.
        define(holder, part, create(null));
        if (holder === root) installed.push(part);
      }
      holder = holder[part] as Record<string, unknown>;
    }
    define(holder, leaf, { [leaf]: (...args: unknown[]) => call(name, args) }[leaf]);
    if (parts.length === 0) installed.push(leaf);
  }
  return () => {
    for (const name of installed) delete root[name];
  };
}

function encodeImageArgument(value: object): string | undefined {
  const image = imageDescriptor(value);
  return image === undefined ? undefined : encodeJson(image, 'image');
}

function toBindingError(name: string, error: unknown): BindingError {
  if (typeof error === 'object' && error !== null) {
    const { message, code } = error as { message?: unknown; code?: unknown };
    return new BindingError(typeof message === 'string' ? message : String(message), name, typeof code === 'string' ? code : undefined);
  }
  return new BindingError(String(error), name);
}

function placeImages(value: unknown, placements: ImagePlacement[]): unknown {
  let root = value;
  for (const { at, image } of placements) {
    if (at.length === 0) {
      root = createImage(image);
      continue;
    }
    let parent = root as Record<string | number, unknown>;
    for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    parent[at[at.length - 1]!] = createImage(image);
  }
  return root;
}
