// The carrier's request/response layer over the control channel. It speaks birpc's wire messages,
// which the host's birpc expects: requests `{t:'q', i, m, a}` (no `i` for a one-way message) and
// replies `{t:'s', i, r}` or `{t:'s', i, e}`. It is the carrier's own rather than birpc because it
// runs while a program runs, in the program's realm in per-call mode: birpc assigns fields on plain
// objects (a setter on Object.prototype sees them), keeps calls in a Map, constructs the global
// Promise and resolves with decoded replies (which a program's Object.prototype.then adopts). This
// layer uses only intrinsics captured before any program exists (intrinsics.ts).
import { types } from 'node:util';
import { apply, ErrorCtor, hasOwn, NativePromise, SafeMap, then, unthenable } from '../hardening/intrinsics.ts';

/** A message as it goes out: a null-prototype record, so building it meets no setter. */
export type OutgoingMessage = Record<string, unknown>;

type Method = (...args: never[]) => unknown;

export interface Rpc {
  /** Calls a host method and resolves with its reply. */
  call(method: string, args: unknown[]): Promise<unknown>;
  /** Sends a one-way message. */
  notify(method: string, args: unknown[]): void;
  /** Handles one decoded frame from the host. */
  receive(message: unknown): void;
  /** How many calls wait for their reply. */
  inFlight(): number;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

const isPromise = types.isPromise;

/**
 * `methods` are the carrier's, called with the request's arguments; `post` sends one message and
 * throws when it cannot be encoded (a request then fails, a reply is replaced by an error reply).
 */
export function createRpc(methods: Record<string, Method>, post: (message: OutgoingMessage) => void): Rpc {
  const pending = new SafeMap<string, Pending>();
  let nextId = 0;

  const reply = (id: string, result: unknown): void => {
    try {
      post({ __proto__: null, t: 's', i: id, r: result });
    } catch (error) {
      post({ __proto__: null, t: 's', i: id, e: error });
    }
  };

  const serve = (message: Record<string, unknown>): void => {
    const id = hasOwn(message, 'i') ? message.i : undefined;
    const name = message.m;
    const method = typeof name === 'string' && hasOwn(methods, name) ? methods[name] : undefined;
    let result: unknown;
    try {
      if (method === undefined) throw new ErrorCtor(`function ${typeof name === 'string' ? `"${name}"` : 'without a name'} not found`);
      // Reflect.apply reads the arguments by index: no iterator, no Function.prototype.apply.
      result = apply(method, undefined, message.a as unknown[]);
    } catch (error) {
      if (typeof id === 'string') post({ __proto__: null, t: 's', i: id, e: error });
      return;
    }
    if (typeof id !== 'string') return;
    if (!isPromise(result)) return reply(id, result);
    then(
      result as Promise<unknown>,
      (value) => reply(id, value),
      (error: unknown) => post({ __proto__: null, t: 's', i: id, e: error }),
    );
  };

  const settle = (message: Record<string, unknown>): void => {
    const id = message.i as string;
    const call = pending.get(id);
    if (call === undefined) return;
    pending.delete(id);
    const error = hasOwn(message, 'e') ? message.e : undefined;
    if (error) return call.reject(error);
    const result = hasOwn(message, 'r') ? message.r : undefined;
    // Decoded data: resolving with it must not find a program's Object.prototype.then.
    call.resolve(typeof result === 'object' && result !== null ? unthenable(result) : result);
  };

  return {
    __proto__: null,
    call(method, args) {
      const id = `${nextId++}`;
      let call!: Pending;
      const promise = new NativePromise<unknown>((resolve, reject) => {
        call = { __proto__: null, resolve, reject } as Pending;
      });
      pending.set(id, call);
      try {
        post({ __proto__: null, t: 'q', i: id, m: method, a: args });
      } catch (error) {
        pending.delete(id);
        call.reject(error);
      }
      return promise;
    },
    notify(method, args) {
      post({ __proto__: null, t: 'q', m: method, a: args });
    },
    inFlight() {
      return pending.size;
    },
    receive(message) {
      if (typeof message !== 'object' || message === null) return;
      const frame = message as Record<string, unknown>;
      if (frame.t === 'q') serve(frame);
      else if (frame.t === 's') settle(frame);
    },
  } as Rpc;
}
