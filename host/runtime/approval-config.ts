// The runtime-wide approval settings: which calls need a person (besides bindings marked with
// `binding(fn, { approval: true })`) and how long a person has to decide.
import type { ApprovalRule, BindingCall } from '../execution/approval.ts';
import { show } from '../../wire/show.ts';

export interface ApprovalConfig {
  /** True gates the call; a predicate that throws gates it too. @default none (only marked bindings are gated) */
  required?: (call: BindingCall) => boolean;
  /** How long a gated call waits for a decision before it fails with code PTC_APPROVAL_TIMEOUT. @default 3600000 (one hour) */
  timeoutMs?: number;
  /**
   * Whether the run's deadline (timeoutMs) runs while a gated call waits for a person: 'paused'
   * stops it for the wait, 'running' keeps it running, the reference's rule ("including time
   * awaiting nested tools or approval"). @default 'paused'
   */
  deadline?: ApprovalDeadline;
  /**
   * Standing answers, checked in order before anyone is asked: the first rule whose binding and
   * argument pattern match a call decides it. A reject rule stops any call it matches, gated or
   * not; an approve rule lets a gated call run unasked. @default none
   */
  rules?: ApprovalRule[];
}

export type ApprovalDeadline = 'paused' | 'running';

export interface ResolvedApproval {
  required?: (call: BindingCall) => boolean;
  timeoutMs: number;
  deadline: ApprovalDeadline;
  rules?: readonly ApprovalRule[];
}

export const APPROVAL_TIMEOUT_MS = 3_600_000;
const MAX_TIMER_MS = 2_147_483_647;

export function resolveApproval(value: unknown): ResolvedApproval {
  if (value === undefined) return { timeoutMs: APPROVAL_TIMEOUT_MS, deadline: 'paused' };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`ptc config: approval must be an object, got ${show(value)}`);
  const approval = value as Record<string, unknown>;
  for (const key of Object.keys(approval)) {
    if (key !== 'required' && key !== 'timeoutMs' && key !== 'deadline' && key !== 'rules') throw new TypeError(`ptc config: approval: unknown field "${key}" (value ${show(approval[key])})`);
  }
  const timeoutMs = approval.timeoutMs ?? APPROVAL_TIMEOUT_MS;
  if (typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) {
    throw new RangeError(`ptc config: approval.timeoutMs must be a positive integer of at most ${MAX_TIMER_MS} ms (Node's timer limit), got ${show(timeoutMs)}`);
  }
  if (approval.required !== undefined && typeof approval.required !== 'function') {
    throw new TypeError(`ptc config: approval.required must be a function of { binding, args }, got ${show(approval.required)}`);
  }
  const deadline = approval.deadline ?? 'paused';
  if (deadline !== 'paused' && deadline !== 'running') throw new TypeError(`ptc config: approval.deadline must be "paused" or "running", got ${show(deadline)}`);
  const rules = approval.rules === undefined ? undefined : resolveRules(approval.rules);
  return { timeoutMs, deadline, ...(approval.required !== undefined ? { required: approval.required as (call: BindingCall) => boolean } : {}), ...(rules !== undefined ? { rules } : {}) };
}

function resolveRules(value: unknown): readonly ApprovalRule[] {
  if (!Array.isArray(value)) throw new TypeError(`ptc config: approval.rules must be an array of { binding, args?, decision, reason? }, got ${show(value)}`);
  return Object.freeze(value.map((rule: unknown, index) => {
    const field = `approval.rules[${index}]`;
    if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) throw new TypeError(`ptc config: ${field} must be an object { binding, args?, decision, reason? }, got ${show(rule)}`);
    const { binding, args, decision, reason, ...rest } = rule as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw new TypeError(`ptc config: ${field}: unknown field "${extra}" (value ${show(rest[extra])})`);
    if (typeof binding !== 'string' || binding === '') throw new TypeError(`ptc config: ${field}.binding must be a binding's dotted name (\`*\` matches any characters), got ${show(binding)}`);
    if (args !== undefined && !Array.isArray(args) && typeof args !== 'function') throw new TypeError(`ptc config: ${field}.args must be an array of argument patterns or a predicate of the arguments, got ${show(args)}`);
    if (decision !== 'approve' && decision !== 'reject') throw new TypeError(`ptc config: ${field}.decision must be "approve" or "reject", got ${show(decision)}`);
    if (reason !== undefined && typeof reason !== 'string') throw new TypeError(`ptc config: ${field}.reason must be a string, got ${show(reason)}`);
    return Object.freeze({ binding, decision, ...(args !== undefined ? { args: args as ApprovalRule['args'] } : {}), ...(reason !== undefined ? { reason } : {}) }) as ApprovalRule;
  }));
}
