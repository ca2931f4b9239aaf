// Approval gates. A gated binding call waits in place, with its carrier alive, until a person
// decides: the host hands a pending action to the run's approval handler, approve runs the call,
// reject makes it throw BindingError code PTC_REJECTED in the program, and the approval timeout
// ends the wait as PTC_APPROVAL_TIMEOUT. The run's deadline is held while a call waits (deadline.ts).
// An answer may cover more than its call (the rest of the run, or the state owner's later runs),
// standing rules answer matching calls without asking, and a whole program can be approved once
// before it runs (program-reach.ts lists the gated bindings it can reach).
import { show } from '../../wire/show.ts';
import type { BindingFunction } from './bindings.ts';
import type { CallContext } from './call-context.ts';

const optionsKey = Symbol.for('ptc.BindingOptions');

/** Per-binding options, attached with `binding(fn, options)`. */
export interface BindingOptions {
  /** Each call waits for an approval before it runs. @default false */
  approval?: boolean;
  /** Undoes one applied call (rollback): called with the call's result and its arguments. */
  revert?: (result: unknown, args: unknown[]) => unknown;
  /**
   * Settles a call that was running when its host died, on resume: answers whether it took effect
   * (and with what value), should run again, or should fail. Without it the call runs again.
   */
  reconcile?: (context: ReconcileContext) => ReconcileAnswer | Promise<ReconcileAnswer>;
}

/** What reconcile is given: the in-doubt attempt's context and the call's arguments. */
export interface ReconcileContext extends CallContext {
  args: unknown[];
}

/** reconcile's answer: the call took effect (the program gets `value`), run it again, or fail it. */
export type ReconcileAnswer = { outcome: 'took-effect'; value?: unknown } | { outcome: 'run-again' } | { outcome: 'fail'; reason?: string };

/** A call the program made, as an approval predicate sees it. */
export interface BindingCall {
  binding: string;
  args: unknown[];
}

/** What an answer covers: its call, the rest of the run, or every later run of the run's stateOwner (a conversation). */
export type ApprovalScope = 'call' | 'run' | 'owner';
export const APPROVAL_SCOPES: readonly ApprovalScope[] = ['call', 'run', 'owner'];

/** A gated call waiting for a person. The first of approve(), reject() and the timeout decides. */
export interface PendingAction extends BindingCall {
  runId: string;
  /** The call's position in the run, from 1, in the order the host received the calls. */
  sequence: number;
  /** Decides for the call (and, with a scope, for the binding's later calls); false when it was decided already (or timed out, or its run ended). */
  approve(options?: { scope?: ApprovalScope }): boolean;
  reject(reason?: string, options?: { scope?: ApprovalScope }): boolean;
  /** How the wait ended. */
  readonly outcome: Promise<ApprovalOutcome>;
}

/** A whole program waiting for a person before it runs: approving it approves the listed bindings' calls for the run. */
export interface PendingProgram {
  runId: string;
  program: string;
  /** The gated bindings the program can reach (every gated binding when it reaches them dynamically), sorted. */
  bindings: string[];
  approve(): boolean;
  reject(reason?: string): boolean;
  readonly outcome: Promise<ApprovalOutcome>;
}

export type ApprovalOutcome = 'approved' | 'rejected' | 'timed-out' | 'withdrawn';

/** What a handler may return instead of calling approve()/reject(): true approves, false rejects. */
export type ApprovalDecision = boolean | { approved: boolean; reason?: string; scope?: ApprovalScope } | undefined | void;
export type ApprovalHandler = (action: PendingAction) => ApprovalDecision | Promise<ApprovalDecision>;
export type ProgramApprovalHandler = (action: PendingProgram) => ApprovalDecision | Promise<ApprovalDecision>;

/** A standing answer: calls of `binding` (`*` matches any run of characters) whose arguments match `args` are approved or rejected without asking. */
export interface ApprovalRule {
  binding: string;
  /** Per argument, a pattern: objects match by the keys they list, arrays element by element, strings as globs (`*`), other values by equality; or a predicate of the arguments. @default any arguments */
  args?: unknown[] | ((args: unknown[]) => boolean);
  decision: 'approve' | 'reject';
  /** The rejection's reason, as the program's BindingError says it. */
  reason?: string;
}

/** How one call's approval was decided, as the journal keeps it. */
export interface ApprovalRecord {
  decision: 'approved' | 'rejected' | 'timed-out';
  /** person: the handler answered this call; earlier-answer: an answer scoped to the run or the owner covered it (program approval is the run's call 0); rule: a standing rule; timeout: nobody answered in time; nobody: the run had no handler. */
  by: 'person' | 'earlier-answer' | 'rule' | 'timeout' | 'nobody';
  /** What the answer covered. */
  scope: ApprovalScope;
  /** earlier-answer: the run and the call whose answer covered this one. */
  runId?: string;
  sequence?: number;
  /** rule: its index in approval.rules. */
  rule?: number;
  reason?: string;
}

/** A scoped answer, kept for the binding's later calls. */
export interface Grant {
  decision: 'approved' | 'rejected';
  scope: 'run' | 'owner';
  runId: string;
  sequence: number;
  reason?: string;
}

/** The scoped answers one run sees: its own, then its owner's (a map the runtime keeps per stateOwner). */
export class Grants {
  readonly #run = new Map<string, Grant>();
  readonly #owner: Map<string, Grant> | undefined;

  constructor(owner?: Map<string, Grant>) {
    this.#owner = owner;
  }

  find(binding: string): Grant | undefined {
    return this.#run.get(binding) ?? this.#owner?.get(binding);
  }

  /** Keeps an answer; an owner scope on a run without an owner covers the run. */
  put(binding: string, grant: Grant): void {
    if (grant.scope === 'owner' && this.#owner !== undefined) this.#owner.set(binding, grant);
    else this.#run.set(binding, grant);
  }
}

/** The approval settings of one run. */
export interface ApprovalSetup {
  /** The runtime-wide predicate: true gates the call (in addition to bindings marked `approval: true`). */
  required?: (call: BindingCall) => boolean;
  rules?: readonly ApprovalRule[];
  timeoutMs: number;
  /** 'running': the run's deadline keeps running while a person decides (the reference's rule); else it is held. */
  deadline?: 'paused' | 'running';
  handler?: ApprovalHandler;
  grants?: Grants;
}

/** Returns `fn` marked with binding options (a new function, so the original stays unmarked). */
export function binding<F extends BindingFunction>(fn: F, options: BindingOptions): F {
  if (typeof fn !== 'function') throw new TypeError(`binding() expects a function, got ${show(fn)}`);
  if (typeof options !== 'object' || options === null) throw new TypeError(`binding() options must be an object, got ${show(options)}`);
  for (const key of Object.keys(options)) {
    if (key !== 'approval' && key !== 'revert' && key !== 'reconcile') throw new TypeError(`binding() options: unknown field "${key}"`);
  }
  if (options.approval !== undefined && typeof options.approval !== 'boolean') throw new TypeError(`binding() options: approval must be a boolean, got ${show(options.approval)}`);
  if (options.revert !== undefined && typeof options.revert !== 'function') throw new TypeError(`binding() options: revert must be a function, got ${show(options.revert)}`);
  if (options.reconcile !== undefined && typeof options.reconcile !== 'function') throw new TypeError(`binding() options: reconcile must be a function, got ${show(options.reconcile)}`);
  const marked = ((...args: unknown[]) => fn(...args)) as F;
  Object.defineProperty(marked, optionsKey, { value: Object.freeze({ ...options }) });
  return marked;
}

export function bindingOptions(fn: BindingFunction): BindingOptions {
  return (fn as unknown as Record<symbol, BindingOptions | undefined>)[optionsKey] ?? {};
}

/** An Error with a code, as the program's BindingError carries it. */
export function coded(message: string, code: string): Error {
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

/** The first standing rule that matches the call, with its index; a predicate that throws matches a reject rule only (fail closed). */
export function matchRule(rules: readonly ApprovalRule[] | undefined, call: BindingCall): { rule: ApprovalRule; index: number } | undefined {
  if (rules === undefined) return undefined;
  for (let index = 0; index < rules.length; index++) {
    const rule = rules[index]!;
    if (!globMatches(rule.binding, call.binding)) continue;
    let matches: boolean;
    try {
      matches = rule.args === undefined ? true : typeof rule.args === 'function' ? rule.args(call.args) === true : rule.args.every((pattern, at) => patternMatches(pattern, call.args[at]));
    } catch {
      matches = rule.decision === 'reject';
    }
    if (matches) return { rule, index };
  }
  return undefined;
}

function globMatches(glob: string, text: string): boolean {
  if (!glob.includes('*')) return glob === text;
  const source = glob.split('*').map((part) => part.replace(/[\\^$.|?+()[\]{}]/g, '\\$&')).join('[\\s\\S]*');
  return new RegExp(`^${source}$`).test(text);
}

function patternMatches(pattern: unknown, value: unknown): boolean {
  if (typeof pattern === 'string') return typeof value === 'string' && globMatches(pattern, value);
  if (Array.isArray(pattern)) return Array.isArray(value) && value.length === pattern.length && pattern.every((item, at) => patternMatches(item, value[at]));
  if (typeof pattern === 'object' && pattern !== null) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    return Object.entries(pattern).every(([key, item]) => Object.hasOwn(value, key) && patternMatches(item, (value as Record<string, unknown>)[key]));
  }
  return Object.is(pattern, value);
}

/** How a wait for a person ended: the outcome, the scope the answer gave, and the program's error when not approved. */
export interface Settled {
  outcome: Exclude<ApprovalOutcome, 'withdrawn'>;
  scope: ApprovalScope;
  reason?: string;
  error?: Error;
}

/**
 * Waits for the decision on one gated call. Resolves with how it was decided; rejects (code
 * PTC_EVALUATION_ENDED) only when the run ends first. `hold` stops the run's deadline while the
 * person decides; `ended` fires when the run ends.
 */
export function awaitApproval(
  setup: ApprovalSetup | undefined,
  action: Omit<PendingAction, 'approve' | 'reject' | 'outcome'>,
  hold: () => () => void,
  ended: AbortSignal,
): Promise<Settled> {
  return ask(action.binding, setup?.handler as ((action: object) => unknown) | undefined, setup?.timeoutMs ?? 0, hold, ended, (finish) => ({
    ...action,
    args: action.args,
    approve: (options?: { scope?: ApprovalScope }) => finish('approved', scopeOf(options?.scope)),
    reject: (reason?: string, options?: { scope?: ApprovalScope }) => finish('rejected', scopeOf(options?.scope), reason),
  }));
}

/** Waits for the decision on a whole program; resolves as awaitApproval does. */
export function awaitProgramApproval(
  handler: ProgramApprovalHandler,
  action: Omit<PendingProgram, 'approve' | 'reject' | 'outcome'>,
  timeoutMs: number,
  ended: AbortSignal,
): Promise<Settled> {
  return ask('the program', handler as (action: object) => unknown, timeoutMs, () => () => {}, ended, (finish) => ({
    ...action,
    approve: () => finish('approved', 'run'),
    reject: (reason?: string) => finish('rejected', 'run', reason),
  }));
}

// An unknown scope is refused loudly: a person who meant "the rest of the run" must not get "this call".
function scopeOf(scope: unknown): ApprovalScope {
  if (scope === undefined) return 'call';
  if (!APPROVAL_SCOPES.includes(scope as ApprovalScope)) throw new TypeError(`approval scope must be ${APPROVAL_SCOPES.map((name) => `"${name}"`).join(', ')}, got ${show(scope)}`);
  return scope as ApprovalScope;
}

type Finish = (how: Settled['outcome'], scope: ApprovalScope, reason?: string) => boolean;

function ask(
  name: string,
  handler: ((action: object) => unknown) | undefined,
  timeoutMs: number,
  hold: () => () => void,
  ended: AbortSignal,
  make: (finish: Finish) => object,
): Promise<Settled> {
  if (handler === undefined) {
    return Promise.resolve({ outcome: 'rejected', scope: 'call', error: coded(`${name} requires approval, and this run has no approval handler to ask`, 'PTC_REJECTED') });
  }
  const release = hold();
  let settle!: (outcome: ApprovalOutcome) => void;
  const outcome = new Promise<ApprovalOutcome>((resolve) => (settle = resolve));
  return new Promise<Settled>((resolve, reject) => {
    let done = false;
    const end = (how: ApprovalOutcome): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(timer);
      ended.removeEventListener('abort', onEnded);
      release();
      settle(how);
      return true;
    };
    const finish: Finish = (how, scope, reason) => {
      if (!end(how)) return false;
      const text = typeof reason === 'string' && reason !== '' ? reason : undefined;
      if (how === 'approved') resolve({ outcome: how, scope });
      else if (how === 'timed-out') resolve({ outcome: how, scope, error: coded(`${name}: no decision within the approval timeout (approvalTimeoutMs ${timeoutMs} ms)`, 'PTC_APPROVAL_TIMEOUT') });
      else resolve({ outcome: how, scope, ...(text !== undefined ? { reason: text } : {}), error: coded(`${name}: rejected${text !== undefined ? `: ${text}` : ''}`, 'PTC_REJECTED') });
      return true;
    };
    const onEnded = (): void => {
      if (end('withdrawn')) reject(coded(`${name}: the evaluation ended while the call waited for approval`, 'PTC_EVALUATION_ENDED'));
    };
    const timer = setTimeout(() => finish('timed-out', 'call'), timeoutMs);
    ended.addEventListener('abort', onEnded, { once: true });
    if (ended.aborted) return void onEnded();
    const failed = (error: unknown): boolean => finish('rejected', 'call', `the approval handler failed: ${error instanceof Error ? error.message : String(error)}`);
    const pending = Object.freeze({ ...make(finish), outcome });
    const decide = (decision: ApprovalDecision): void => {
      try {
        if (decision === true) finish('approved', 'call');
        else if (decision === false) finish('rejected', 'call');
        else if (typeof decision === 'object' && decision !== null) {
          finish(decision.approved === true ? 'approved' : 'rejected', scopeOf(decision.scope), decision.reason);
        }
      } catch (error) {
        failed(error);
      }
    };
    try {
      Promise.resolve(handler(pending) as ApprovalDecision).then(decide, failed);
    } catch (error) {
      failed(error);
    }
  });
}
