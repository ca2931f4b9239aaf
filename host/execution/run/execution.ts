// One run as the environment receives it: the request resolve() normalised, with the runtime's
// per-run parts (bindings flattened, attachment ids, approval, journal).
import type { BindingFunction } from '../bindings.ts';
import type { OutputEntry } from '../output-ledger.ts';
import type { ApprovalSetup } from '../approval.ts';
import { STEP, type RunJournal } from '../journal/replay.ts';
import type { ProgramFormat, RunRequest } from '../../../wire/messages.ts';
import type { ResolvedConfig } from '../settings.ts';
import type { RunTrace } from '../tracing.ts';

export interface Execution {
  /** Program source in erasable TypeScript. */
  program: string;
  filename: string;
  cwd: string;
  bindings: Map<string, BindingFunction>;
  discardCompletion: boolean;
  display?: { colors: boolean; underscore?: true };
  timeoutMs: number | null;
  /** CPU budget of this run, ms of the whole process tree; null for none. */
  cpuTimeMs: number | null;
  signal?: AbortSignal;
  onOutput?: (entry: OutputEntry) => void;
  /** The program called yieldControl(): a handle's pending look returns now. */
  onYield?: () => void;
  nextAttachmentId(): string;
  /** Names the run in pending actions (and in the journal). */
  runId: string;
  approval?: ApprovalSetup;
  /** Records the run's calls; on a resume, answers the calls it already holds. */
  journal?: RunJournal;
  /** The run's span and its steps, when tracing is on (docs/traces.md). */
  trace?: RunTrace;
}

/** What the carrier is sent for one run: the execution, its stripped program and the runtime's limits. */
export function carrierRequest(
  execution: Execution,
  carrier: { format: ProgramFormat; retain: boolean; program: string; initializer: string | undefined; announceStart: boolean },
  config: ResolvedConfig,
): RunRequest {
  const bindings = [...execution.bindings.keys()];
  return {
    format: carrier.format,
    retain: carrier.retain,
    program: carrier.program,
    ...(carrier.initializer !== undefined ? { initializer: carrier.initializer } : {}),
    filename: execution.filename,
    cwd: execution.cwd,
    bindings: execution.journal !== undefined ? [...bindings, STEP] : bindings,
    discardCompletion: execution.discardCompletion,
    ...(execution.display !== undefined ? { display: execution.display } : {}),
    maxPendingCalls: config.maxPendingCalls,
    maxMessageBytes: config.maxMessageBytes,
    maxOutputBytes: config.maxOutputBytes,
    announceStart: carrier.announceStart,
    ...(config.imports !== undefined ? { imports: config.imports } : {}),
  };
}
