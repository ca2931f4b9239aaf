// The runtime-wide approval settings: which calls need a person (besides bindings marked with
// `binding(fn, { approval: true })`) and how long a person has to decide.
import type { BindingCall } from '../execution/approval.ts';
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
}

export type ApprovalDeadline = 'paused' | 'running';

export interface ResolvedApproval {
  required?: (call: BindingCall) => boolean;
  timeoutMs: number;
  deadline: ApprovalDeadline;
}

export const APPROVAL_TIMEOUT_MS = 3_600_000;
const MAX_TIMER_MS = 2_147_483_647;

export function resolveApproval(value: unknown): ResolvedApproval {
  if (value === undefined) return { timeoutMs: APPROVAL_TIMEOUT_MS, deadline: 'paused' };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`ptc config: approval must be an object, got ${show(value)}`);
  const approval = value as Record<string, unknown>;
  for (const key of Object.keys(approval)) {
    if (key !== 'required' && key !== 'timeoutMs' && key !== 'deadline') throw new TypeError(`ptc config: approval: unknown field "${key}" (value ${show(approval[key])})`);
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
  return { timeoutMs, deadline, ...(approval.required !== undefined ? { required: approval.required as (call: BindingCall) => boolean } : {}) };
}
