// One approval for a whole program, asked before it runs: the person sees the program and the
// gated bindings it can reach, and approving it approves those bindings' calls for the run (an
// answer scoped to the run, journaled as the run's call 0). A program that reaches no gated
// binding runs without asking; a rejected one never starts.
import { awaitProgramApproval, bindingOptions, type Grants, type ProgramApprovalHandler } from '../execution/approval.ts';
import type { BindingFunction } from '../execution/bindings.ts';
import { PROGRAM, type RunJournal } from '../execution/journal/replay.ts';
import { reachableBindings } from '../execution/program-reach.ts';
import { abortedBeforeStart, rejectedBeforeStart } from '../execution/run/outcome.ts';
import type { RunResult } from '../execution/owners.ts';
import { stripTypes } from '../execution/typescript.ts';
import type { ProgramFormat } from './instructions.ts';

export interface ProgramAsk {
  runId: string;
  program: string;
  filename: string;
  format: ProgramFormat;
  bindings: Map<string, BindingFunction>;
  handler: ProgramApprovalHandler;
  timeoutMs: number;
  signal: AbortSignal;
  grants: Grants;
  journal: RunJournal | undefined;
}

/** Asks for the program's approval; undefined when it may run (approved, or nothing to approve), else the run's result. */
export async function approveProgram(ask: ProgramAsk): Promise<RunResult | undefined> {
  const { runId, journal, grants } = ask;
  // A resumed run whose program was approved keeps that answer (the journal's grants hold it).
  if (journal?.detail(0).approval !== undefined) return undefined;
  const stripped = stripTypes(ask.program, ask.filename, ask.format);
  // A program that does not parse makes no call; its run reports the syntax error.
  if (!stripped.ok) return undefined;
  const gated = [...ask.bindings].filter(([, fn]) => bindingOptions(fn).approval === true).map(([name]) => name);
  const listed = reachableBindings(stripped.code, ask.format, gated);
  if (listed.length === 0) return undefined;
  const argsText = JSON.stringify(listed);
  journal?.record(0, PROGRAM, argsText, 'waiting');
  journal?.status('waiting');
  let settled;
  try {
    settled = await awaitProgramApproval(ask.handler, { runId, program: ask.program, bindings: listed }, ask.timeoutMs, ask.signal);
  } catch {
    return abortedBeforeStart(ask.signal.reason);
  }
  const by = settled.outcome === 'timed-out' ? 'timeout' : 'person';
  journal?.note(0, { approval: { decision: settled.outcome, by, scope: 'run', ...(settled.reason !== undefined ? { reason: settled.reason } : {}) } });
  if (settled.outcome !== 'approved') {
    const error = settled.error!;
    journal?.record(0, PROGRAM, argsText, 'rejected', null, JSON.stringify({ message: error.message, code: (error as { code?: string }).code }));
    return rejectedBeforeStart(error.message, (error as { code?: string }).code ?? 'PTC_REJECTED');
  }
  journal?.record(0, PROGRAM, argsText, 'done', JSON.stringify({ value: null, images: [] }));
  journal?.status('running');
  for (const binding of listed) grants.put(binding, { decision: 'approved', scope: 'run', runId, sequence: 0 });
  return undefined;
}
