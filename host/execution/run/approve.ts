// Whether a call may run. A standing rule that rejects it stops it, gated or not; a gated call is
// then approved by a rule, by an earlier answer scoped to the run or the owner, or by a person,
// who waits with the run's deadline held (unless approval.deadline is 'running'). Each decision
// and what it covered is journaled, so `calls()` shows why a call ran, and a resumed run knows
// the call was waiting and is not asked again about a rejection.
import { awaitApproval, coded, isGated, matchRule, type ApprovalRecord, type Settled } from '../approval.ts';
import type { BindingFunction } from '../bindings.ts';
import type { Deadline } from '../deadline.ts';
import type { Execution } from './execution.ts';
import { errorText } from './replay.ts';
import type { RunState } from './state.ts';

/** How an approval wait that threw ended, by the code of its error (the ApprovalOutcome names). */
const APPROVAL_OUTCOMES: Record<string, string> = { PTC_REJECTED: 'rejected', PTC_APPROVAL_TIMEOUT: 'timed-out', PTC_EVALUATION_ENDED: 'withdrawn' };

/** One binding call as the dispatch sees it: its journal position, name, arguments and text. */
export interface CallAt {
  position: number;
  name: string;
  args: unknown[];
  argsText: string;
}

/** Resolves once the call may run: at once when it is not gated, else when a rule, an earlier answer or a person approves it. */
export async function approveCall(execution: Execution, binding: BindingFunction, call: CallAt, deadline: Deadline, state: RunState): Promise<void> {
  const { position, name, args, argsText } = call;
  const setup = execution.approval;
  const journal = execution.journal;
  const refuse = (record: ApprovalRecord, error: Error): never => {
    journal?.note(position, { approval: record });
    journal?.record(position, name, argsText, 'rejected', null, errorText(error));
    throw error;
  };
  const matched = matchRule(setup?.rules, { binding: name, args });
  if (matched?.rule.decision === 'reject') {
    const reason = matched.rule.reason ?? `approval rule ${matched.index} rejects this call`;
    refuse({ decision: 'rejected', by: 'rule', scope: 'call', rule: matched.index, reason }, coded(`${name}: rejected: ${reason}`, 'PTC_REJECTED'));
  }
  if (!isGated(setup, binding, { binding: name, args })) return;
  if (matched !== undefined) return void journal?.note(position, { approval: { decision: 'approved', by: 'rule', scope: 'call', rule: matched.index } });
  const grant = setup?.grants?.find(name);
  if (grant !== undefined) {
    const record: ApprovalRecord = { decision: grant.decision, by: 'earlier-answer', scope: grant.scope, runId: grant.runId, sequence: grant.sequence, ...(grant.reason !== undefined ? { reason: grant.reason } : {}) };
    if (grant.decision === 'rejected') refuse(record, coded(`${name}: rejected${grant.reason !== undefined ? `: ${grant.reason}` : ''} (an answer for the ${grant.scope === 'owner' ? 'owner' : 'run'} at call ${grant.sequence})`, 'PTC_REJECTED'));
    return void journal?.note(position, { approval: record });
  }
  journal?.record(position, name, argsText, 'waiting');
  journal?.status('waiting');
  const hold = setup?.deadline === 'running' ? () => () => {} : deadline.hold;
  const span = execution.trace?.step('ptc.approval', { 'ptc.binding.name': name, 'ptc.binding.sequence': position });
  let settled: Settled;
  try {
    // Rejects only when the run ends first; the call then stays `waiting`, to be asked again on resume.
    settled = await awaitApproval(setup, { runId: execution.runId, sequence: position, binding: name, args }, hold, state.ended.signal);
  } catch (error) {
    span?.fail(error, { 'ptc.approval.outcome': APPROVAL_OUTCOMES[(error as { code?: string }).code ?? ''] ?? 'failed' });
    throw error;
  }
  const by: ApprovalRecord['by'] = setup?.handler === undefined ? 'nobody' : settled.outcome === 'timed-out' ? 'timeout' : 'person';
  const record: ApprovalRecord = { decision: settled.outcome, by, scope: settled.scope, ...(settled.reason !== undefined ? { reason: settled.reason } : {}) };
  if (settled.scope !== 'call' && settled.outcome !== 'timed-out') {
    setup?.grants?.put(name, { decision: settled.outcome, scope: settled.scope, runId: execution.runId, sequence: position, ...(settled.reason !== undefined ? { reason: settled.reason } : {}) });
  }
  if (settled.error !== undefined) {
    span?.fail(settled.error, { 'ptc.approval.outcome': settled.outcome });
    refuse(record, settled.error);
  }
  span?.end({ 'ptc.approval.outcome': 'approved' });
  journal?.note(position, { approval: record });
  journal?.status('running');
}
