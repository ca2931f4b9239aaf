// Approval gates. A gated binding call waits in place, with its carrier alive, until a person
// decides: the host hands a pending action to the run's approval handler, approve runs the call,
// reject makes it throw BindingError code PTC_REJECTED in the program, and the approval timeout
// ends the wait as PTC_APPROVAL_TIMEOUT. The run's deadline is held while a call waits (deadline.ts).
import { show } from '../../wire/show.ts';
import type { BindingFunction } from './bindings.ts';

const optionsKey = Symbol.for('ptc.BindingOptions');

/** Per-binding options, attached with `binding(fn, options)`. */
export interface BindingOptions {
  /** Each call waits for an approval before it runs. @default false */
  approval?: boolean;
  /** Undoes one applied call (rollback): called with the call's result and its arguments. */
  revert?: (result: unknown, args: unknown[]) => unknown;
}

/** A call the program made, as an approval predicate sees it. */
export interface BindingCall {
  binding: string;
  args: unknown[];
}

/** A gated call waiting for a person. The first of approve(), reject() and the timeout decides. */
export interface PendingAction extends BindingCall {
  runId: string;
  /** The call's position in the run, from 1, in the order the host received the calls. */
  sequence: number;
  /** Decides for the call; false when it was decided already (or timed out, or its run ended). */
  approve(): boolean;
  reject(reason?: string): boolean;
  /** How the wait ended. */
  readonly outcome: Promise<ApprovalOutcome>;
}

export type ApprovalOutcome = 'approved' | 'rejected' | 'timed-out' | 'withdrawn';

/** What a handler may return instead of calling approve()/reject(): true approves, false rejects. */
export type ApprovalDecision = boolean | { approved: boolean; reason?: string } | undefined | void;
export type ApprovalHandler = (action: PendingAction) => ApprovalDecision | Promise<ApprovalDecision>;

/** The approval settings of one run. */
export interface ApprovalSetup {
  /** The runtime-wide predicate: true gates the call (in addition to bindings marked `approval: true`). */
  required?: (call: BindingCall) => boolean;
  timeoutMs: number;
  /** 'running': the run's deadline keeps running while a person decides (the reference's rule); else it is held. */
  deadline?: 'paused' | 'running';
  handler?: ApprovalHandler;
}

/** Returns `fn` marked with binding options (a new function, so the original stays unmarked). */
export function binding<F extends BindingFunction>(fn: F, options: BindingOptions): F {
  if (typeof fn !== 'function') throw new TypeError(`binding() expects a function, got ${show(fn)}`);
  if (typeof options !== 'object' || options === null) throw new TypeError(`binding() options must be an object, got ${show(options)}`);
  for (const key of Object.keys(options)) {
    if (key !== 'approval' && key !== 'revert') throw new TypeError(`binding() options: unknown field "${key}"`);
  }
  if (options.approval !== undefined && typeof options.approval !== 'boolean') throw new TypeError(`binding() options: approval must be a boolean, got ${show(options.approval)}`);
  if (options.revert !== undefined && typeof options.revert !== 'function') throw new TypeError(`binding() options: revert must be a function, got ${show(options.revert)}`);
  const marked = ((...args: unknown[]) => fn(...args)) as F;
  Object.defineProperty(marked, optionsKey, { value: Object.freeze({ ...options }) });
  return marked;
}

export function bindingOptions(fn: BindingFunction): BindingOptions {
  return (fn as unknown as Record<symbol, BindingOptions | undefined>)[optionsKey] ?? {};
}

function coded(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** Whether a call is gated; a predicate that throws gates it (fail closed). */
export function isGated(setup: ApprovalSetup | undefined, fn: BindingFunction, call: BindingCall): boolean {
  if (bindingOptions(fn).approval === true) return true;
  if (setup?.required === undefined) return false;
  try {
    return setup.required(call) === true;
  } catch {
    return true;
  }
}

/**
 * Waits for the decision on one gated call; resolves when approved, rejects with a coded Error
 * otherwise. `hold` stops the run's deadline while the person decides; `ended` fires when the run ends.
 */
export function awaitApproval(
  setup: ApprovalSetup | undefined,
  action: Omit<PendingAction, 'approve' | 'reject' | 'outcome'>,
  hold: () => () => void,
  ended: AbortSignal,
): Promise<void> {
  const name = action.binding;
  if (setup?.handler === undefined) {
    return Promise.reject(coded(`${name} requires approval, and this run has no approval handler to ask`, 'PTC_REJECTED'));
  }
  const release = hold();
  let settle!: (outcome: ApprovalOutcome) => void;
  const outcome = new Promise<ApprovalOutcome>((resolve) => (settle = resolve));
  return new Promise<void>((resolve, reject) => {
    let done = false;
    const finish = (how: ApprovalOutcome, error?: Error): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(timer);
      ended.removeEventListener('abort', onEnded);
      release();
      settle(how);
      if (error === undefined) resolve();
      else reject(error);
      return true;
    };
    const onEnded = (): boolean => finish('withdrawn', coded(`${name}: the evaluation ended while the call waited for approval`, 'PTC_EVALUATION_ENDED'));
    const timer = setTimeout(
      () => finish('timed-out', coded(`${name}: no decision within the approval timeout (approvalTimeoutMs ${setup.timeoutMs} ms)`, 'PTC_APPROVAL_TIMEOUT')),
      setup.timeoutMs,
    );
    ended.addEventListener('abort', onEnded, { once: true });
    if (ended.aborted) return void onEnded();
    const rejectWith = (reason?: unknown): boolean =>
      finish('rejected', coded(`${name}: rejected${typeof reason === 'string' && reason !== '' ? `: ${reason}` : ''}`, 'PTC_REJECTED'));
    const pending: PendingAction = Object.freeze({
      ...action,
      args: action.args,
      approve: () => finish('approved'),
      reject: (reason?: string) => rejectWith(reason),
      outcome,
    });
    const decide = (decision: ApprovalDecision): void => {
      if (decision === true) finish('approved');
      else if (decision === false) rejectWith();
      else if (typeof decision === 'object' && decision !== null) {
        if (decision.approved === true) finish('approved');
        else rejectWith(decision.reason);
      }
    };
    try {
      Promise.resolve(setup.handler!(pending)).then(decide, (error: unknown) => rejectWith(`the approval handler failed: ${error instanceof Error ? error.message : String(error)}`));
    } catch (error) {
      rejectWith(`the approval handler failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
}
