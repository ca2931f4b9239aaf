// The binding calls of one run. The carrier declares only this run's bindings and enforces both
// in-flight limits before it sends a call (the host counts a call until its reply is written, the
// carrier until it is read), so a call past them did not come from the carrier's own code: the
// run fails. A journaled run answers from the journal what it already holds, and records each
// call's answer before the program hears it.
import type { ImageDescriptor, InvokeResult } from '../../../wire/messages.ts';
import { bindingFailure, decodeArguments, encodeResult, type BindingFunction } from '../bindings.ts';
import { bindingOptions, coded, type ReconcileAnswer } from '../approval.ts';
import { idempotencyKey, withCallContext, type CallContext } from '../call-context.ts';
import { show } from '../../../wire/show.ts';
import type { Deadline } from '../deadline.ts';
import { protocolFailure } from '../failures.ts';
import { STEP } from '../journal/replay.ts';
import type { ResolvedConfig } from '../settings.ts';
import { approveCall } from './approve.ts';
import type { Execution } from './execution.ts';
import { diverge, errorText, journalSteps, replayed } from './replay.ts';
import { evaluationEnded, type RunState } from './state.ts';

export interface DispatchSetup {
  execution: Execution;
  config: ResolvedConfig;
  state: RunState;
  deadline: Deadline;
  /** Registers an image file a binding named (relative to the run's cwd); `caller` names who in errors. */
  registerImage(path: string, caller: string): Promise<ImageDescriptor>;
}

/** The run's answer to the carrier's `invoke`: checks the limits, replays, gates, calls and records. */
export function dispatcher({ execution, config, state, deadline, registerImage }: DispatchSetup): (name: string, argsText: string) => Promise<InvokeResult> {
  const journal = execution.journal;
  const step = journal === undefined ? undefined : journalSteps(journal, state);
  const imageOf = (name: string) => (path: string) => registerImage(path, `${name}: image()`);
  let pendingCalls = 0;
  let pendingBytes = 0;
  let sequence = 0;

  const refused = (name: string, bytes: number): string | undefined => {
    if (!execution.bindings.has(name) && !(name === STEP && step !== undefined)) return `the carrier called ${JSON.stringify(name)}, which is not a binding of this run`;
    if (pendingCalls >= config.maxPendingCalls) return `the carrier made more than maxPendingCalls (${config.maxPendingCalls}) binding calls at once`;
    if (pendingBytes + bytes > config.maxMessageBytes) return `the carrier's binding calls in flight carry more than maxMessageBytes (${config.maxMessageBytes} bytes) of arguments`;
    return undefined;
  };

  const encode = async (name: string, result: unknown): Promise<InvokeResult> => {
    if (state.settled) throw evaluationEnded(`${name}: the evaluation has ended`);
    const encoded = await encodeResult(name, result, imageOf(name));
    const resultBytes = encoded.value === undefined ? 0 : Buffer.byteLength(encoded.value);
    if (resultBytes > config.maxMessageBytes) {
      throw Object.assign(new Error(`${name}: the result (${resultBytes} bytes of JSON) is larger than one control message (maxMessageBytes ${config.maxMessageBytes})`), { code: 'PTC_MESSAGE_LIMIT' });
    }
    return encoded;
  };

  // Committed before the program hears the answer: an answer it acted on is never lost.
  const answered = (context: CallContext, argsText: string, encoded: InvokeResult): InvokeResult => {
    journal?.record(context.sequence, context.binding, argsText, 'done', JSON.stringify({ value: encoded.value ?? null, images: encoded.images.map(({ at, image }) => ({ at, path: image.path })) }));
    return encoded;
  };

  const call = async (name: string, argsText: string): Promise<InvokeResult> => {
    let position = ++sequence;
    if (name === STEP) return step!(argsText);
    const binding = execution.bindings.get(name)!;
    let attempt = 1;
    let inDoubt = false;
    if (journal !== undefined) {
      const match = journal.match(name, argsText);
      if (match.kind === 'answered') {
        execution.trace?.step(`ptc.binding ${name}`, { 'ptc.binding.name': name, 'ptc.binding.sequence': match.call.sequence, 'ptc.binding.replayed': true }).end({ 'ptc.binding.status': 'ok' });
        return replayed(match.call, imageOf(name));
      }
      if (match.kind === 'diverged') diverge(state, match);
      position = match.sequence;
      const previous = match.detail.attempt ?? 0;
      inDoubt = match.resumed === 'started';
      attempt = inDoubt ? previous + 1 : Math.max(previous, 1);
    }
    const args = await decodeArguments(argsText);
    const context: CallContext = { runId: execution.runId, binding: name, sequence: position, attempt, idempotencyKey: idempotencyKey(execution.runId, position) };
    // A call that was running when its host died: its binding's reconcile says what became of it.
    if (inDoubt) {
      const settled = await reconcileCall(binding, { ...context, attempt: attempt - 1 }, args);
      if (settled !== undefined) {
        journal?.note(position, { reconciled: settled.outcome, ...(settled.outcome === 'fail' && settled.reason !== undefined ? { reason: settled.reason } : {}) });
        if (settled.outcome === 'took-effect') {
          let encoded: InvokeResult;
          try {
            encoded = await encode(name, settled.value);
          } catch (error) {
            journal?.record(position, name, argsText, 'failed', null, errorText(error));
            throw error;
          }
          return answered(context, argsText, encoded);
        }
        if (settled.outcome === 'fail') {
          const error = coded(`${name}: the call was in doubt after a crash, and its reconcile failed it${settled.reason !== undefined ? `: ${settled.reason}` : ''}`, 'PTC_RECONCILE_FAILED');
          journal?.record(position, name, argsText, 'failed', null, errorText(error));
          throw error;
        }
      }
    }
    await approveCall(execution, binding, { position, name, args, argsText }, deadline, state);
    journal?.note(position, { attempt });
    journal?.record(position, name, argsText, 'started');
    // The call's span covers the binding only: its approval wait has a span of its own.
    const span = execution.trace?.step(`ptc.binding ${name}`, { 'ptc.binding.name': name, 'ptc.binding.sequence': position });
    let encoded: InvokeResult;
    try {
      const invoke = () => withCallContext(context, () => binding(...args));
      encoded = await encode(name, await (span === undefined ? invoke() : span.within(invoke)));
    } catch (error) {
      span?.fail(error, { 'ptc.binding.status': 'failed' });
      journal?.record(position, name, argsText, 'failed', null, errorText(error));
      throw error;
    }
    span?.end({ 'ptc.binding.status': 'ok' });
    return answered(context, argsText, encoded);
  };

  return async (name, argsText) => {
    if (state.settled) throw evaluationEnded(`${name}: the evaluation has ended`);
    const bytes = Buffer.byteLength(argsText);
    const problem = refused(name, bytes);
    if (problem !== undefined) {
      state.stop(protocolFailure(`invalid control message: ${problem}`));
      throw Object.assign(new Error(problem), { code: 'PTC_PROTOCOL' });
    }
    pendingCalls++;
    pendingBytes += bytes;
    try {
      return await call(name, argsText);
    } catch (error) {
      throw bindingFailure(error);
    } finally {
      pendingCalls--;
      pendingBytes -= bytes;
    }
  };
}

/**
 * Asks a binding's reconcile about its in-doubt call; undefined when it has none (the call runs
 * again). A reconcile that throws or answers something else fails the call, naming what it did:
 * running the call again on a broken answer could do twice what must happen once.
 */
async function reconcileCall(binding: BindingFunction, context: CallContext, args: unknown[]): Promise<ReconcileAnswer | undefined> {
  const reconcile = bindingOptions(binding).reconcile;
  if (reconcile === undefined) return undefined;
  let answer: unknown;
  try {
    answer = await withCallContext(context, () => reconcile(Object.freeze({ ...context, args })));
  } catch (error) {
    return { outcome: 'fail', reason: `reconcile threw: ${error instanceof Error ? error.message : String(error)}` };
  }
  const outcome = (answer as { outcome?: unknown } | null)?.outcome;
  if (typeof answer === 'object' && answer !== null && (outcome === 'took-effect' || outcome === 'run-again' || outcome === 'fail')) {
    const reason = (answer as { reason?: unknown }).reason;
    return outcome === 'fail' ? { outcome, ...(typeof reason === 'string' ? { reason } : {}) } : (answer as ReconcileAnswer);
  }
  return { outcome: 'fail', reason: `reconcile answered ${show(answer)}, not {outcome: "took-effect", value} or {outcome: "run-again"} or {outcome: "fail", reason}` };
}
