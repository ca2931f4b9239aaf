// What a binding knows of the call it is answering: the run, the call's place in it, which
// attempt this is, and an idempotency key a tool can hand to the service it calls. It is read with
// callContext() inside the binding (AsyncLocalStorage, the way Node code reads a request's
// context, OpenTelemetry's active span for one) rather than passed as an argument, so existing
// bindings keep their argument lists and a binding that forwards to another function keeps it too.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';

/** The context of one binding call. */
export interface CallContext {
  runId: string;
  /** The call's binding, by its dotted name. */
  binding: string;
  /** The call's position in the run, from 1; a resumed run makes the same call at the same sequence. */
  sequence: number;
  /** 1 the first time the binding runs for this call; one more each time a resumed run makes it again. */
  attempt: number;
  /** The same for every attempt of this call, different for every other call: the runId and sequence, hashed. */
  idempotencyKey: string;
}

const storage = new AsyncLocalStorage<CallContext>();

/** The context of the binding call being answered, or undefined outside one. */
export function callContext(): CallContext | undefined {
  return storage.getStore();
}

/** Runs `fn` (a binding, or its reconcile) with `context` as its call context. */
export function withCallContext<T>(context: CallContext, fn: () => T): T {
  return storage.run(Object.freeze({ ...context }), fn);
}

/** The key of call `sequence` of run `runId`: 32 hex digits, so it fits the services that bound their keys' length. */
export function idempotencyKey(runId: string, sequence: number): string {
  return createHash('sha256').update(`ptc-call\u0000${runId}\u0000${sequence}`).digest('hex').slice(0, 32);
}
