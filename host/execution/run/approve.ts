// A gated call waits for its decision with the run's deadline held (unless approval.deadline is 'running'); the wait and the decision are
// journaled, so a resumed run knows the call was waiting and a rejection is not asked again.
import { awaitApproval, isGated } from '../approval.ts';
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

/** Resolves once the call may run: at once when it is not gated, else when a person approves it. */
export async function approveCall(execution: Execution, binding: BindingFunction, call: CallAt, deadline: Deadline, state: RunState): Promise<void> {
  const { position, name, args, argsText } = call;
  if (!isGated(execution.approval, binding, { binding: name, args })) return;
  const journal = execution.journal;
  journal?.record(position, name, argsText, 'waiting');
  journal?.status('waiting');
  const span = execution.trace?.step('ptc.approval', { 'ptc.binding.name': name, 'ptc.binding.sequence': position });
  try {
    const hold = execution.approval?.deadline === 'running' ? () => () => {} : deadline.hold;
    await awaitApproval(execution.approval, { runId: execution.runId, sequence: position, binding: name, args }, hold, state.ended.signal);
  } catch (error) {
    const code = (error as { code?: string }).code;
    span?.fail(error, { 'ptc.approval.outcome': APPROVAL_OUTCOMES[code ?? ''] ?? 'failed' });
    // A decision (or its timeout) is journaled; a call whose run ended still waits for one.
    if (code !== 'PTC_EVALUATION_ENDED') journal?.record(position, name, argsText, 'rejected', null, errorText(error));
    throw error;
  }
  span?.end({ 'ptc.approval.outcome': 'approved' });
  journal?.status('running');
}
