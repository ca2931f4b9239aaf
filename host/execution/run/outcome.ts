// What a run returns: the result shapes, and the builders of each failure a run can end with
// (besides the ones failures.ts shares with the rest of the host).
import type { JsonValue } from '../../../wire/json.ts';
import { decodeJsonAsync } from '../../../wire/decode.ts';
import type { RunOutcome } from '../../../wire/messages.ts';
import type { ResolvedConfig } from '../settings.ts';
import { abortFailure, exceptionFailure, protocolFailure, type Failure } from '../failures.ts';
import { fittingPrefix, type OutputEntry, type OutputLedger } from '../output-ledger.ts';
import type { SandboxSetup } from '../../sandbox/index.ts';
import { cpuMessage, type CpuEnforcement, type CpuOverrun, type DiskEnforcement, type MemoryEnforcement, type TaskEnforcement } from '../../../supervision/resources/guard.ts';

/** The confinement a run had, and whether the program met a denial (independent of its outcome). */
export interface SandboxReport extends SandboxSetup {
  denied: boolean;
  /** What bounds the memory of the carrier's process tree (maxMemoryMb): none when nothing does. */
  memory: MemoryEnforcement;
  /** What bounds the number of tasks (threads and processes) of the carrier's process tree: the kernel (cgroup pids.max), the /proc watchdog, or nothing. */
  tasks: TaskEnforcement;
  /** What counts the run's CPU time against cpuTimeMs: the kernel (the cgroup's total, every task that ran), the /proc watchdog, or none without a budget. */
  cpu: CpuEnforcement;
  /** What bounds the disk use of the carrier's process tree (maxDiskMb): none when nothing does. */
  disk: DiskEnforcement;
}

/** What a retained run says about the environment it ran in. */
export interface EnvironmentReport {
  /** True when this run started a new environment (first run, or after the last one was lost). */
  fresh: boolean;
  /** Why the previous environment was replaced, when it was. */
  replaced?: string;
}

/** Fields of every result. */
interface RunFacts {
  output: OutputEntry[];
  sandbox: SandboxReport;
  environment?: EnvironmentReport;
  /**
   * True when the run waited for no carrier to boot: it took a booted carrier from the warm pool,
   * or ran in its owner's live environment. False when it started a carrier (or none at all).
   */
  warm: boolean;
}

export type RunResult =
  | ({ status: 'ok'; /** The journal's name for the run, in a runtime with a journal. */ runId?: string; value?: JsonValue; /** Why a per-call run returned nothing, when its last expression was discarded. */ hint?: string; /** The completion as text, for a run with `display`. */ display?: string } & RunFacts)
  | ({ status: 'failed'; failure: Failure; runId?: string } & RunFacts);

/** The protocol message of a carrier whose control channel closed mid-run: a worker-exit, not a protocol failure. */
export const CONTROL_LOST = 'the carrier closed its control channel before the program finished';

const UNCONFINED: SandboxSetup = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true };

/** The failed result of a run, with the output that fit. */
export function failedResult(failure: Failure, ledger: OutputLedger, sandbox: SandboxReport, warm: boolean): RunResult {
  return { status: 'failed', failure, output: ledger.entries, sandbox, warm };
}

/** The result of a carrier's reply: its value, or the failure the reply stands for. */
export async function completedResult(outcome: RunOutcome, ledger: OutputLedger, sandbox: SandboxReport, config: ResolvedConfig, warm: boolean): Promise<RunResult> {
  const limit = config.maxOutputBytes;
  const failed = (failure: Failure): RunResult => failedResult(failure, ledger, sandbox, warm);
  switch (outcome.status) {
    case 'ok': {
      if (outcome.display !== undefined) {
        if (!ledger.charge(Buffer.byteLength(outcome.display))) return failed(outputLimitFailure(limit, 'the completion value'));
        return { status: 'ok', display: outcome.display, output: ledger.entries, sandbox, warm };
      }
      if (outcome.value === undefined) return { status: 'ok', output: ledger.entries, sandbox, warm };
      if (!ledger.charge(Buffer.byteLength(outcome.value))) return failed(outputLimitFailure(limit, 'the completion value'));
      let value: JsonValue;
      try {
        value = await decodeJsonAsync(outcome.value);
      } catch (error) {
        return failed(protocolFailure(`the carrier sent an unparsable completion: ${(error as Error).message}`));
      }
      return { status: 'ok', value, output: ledger.entries, sandbox, warm };
    }
    case 'oversized':
      ledger.charge(Number.MAX_SAFE_INTEGER);
      return failed({
        kind: 'output-limit',
        message: `the completion value (${outcome.bytes} bytes) does not fit maxOutputBytes (${limit}) or one control message (maxMessageBytes ${config.maxMessageBytes}); the output that fit is kept`,
      });
    case 'invalid-output': {
      const failure: Failure = { kind: 'invalid-output', message: outcome.message, path: outcome.path };
      if (outcome.truncated === true) failure.truncated = true;
      fitDiagnostic(failure, ledger, ['message', 'path']);
      return failed(failure);
    }
    case 'stopped':
      return failed(protocolFailure('the carrier reported a stop nobody asked for'));
    case 'exception': {
      const failure = exceptionFailure(outcome.error);
      if (outcome.initializer) failure.message = `the environment initializer failed: ${failure.message}`;
      if (outcome.truncated === true) failure.truncated = true;
      fitDiagnostic(failure, ledger);
      return failed(failure);
    }
  }
}

// The diagnostic shares the output budget; what does not fit is cut, later fields first (the
// stack, the path), rather than lose the exception or the invalid value behind an output-limit;
// a failure that lost anything says so (`truncated`).
function fitDiagnostic(failure: Failure, ledger: OutputLedger, fields: Array<'message' | 'stack' | 'path'> = ['message', 'stack']): void {
  let budget = ledger.remaining;
  let used = 0;
  for (const field of fields) {
    const text = failure[field];
    if (text === undefined) continue;
    const kept = fittingPrefix(text, budget);
    if (kept !== text) failure.truncated = true;
    failure[field] = kept;
    const bytes = Buffer.byteLength(kept);
    budget -= bytes;
    used += bytes;
  }
  ledger.charge(used);
}

/** A run past its CPU budget: a timeout that names the budget and the time used. */
export function overrunFailure(over: CpuOverrun): Failure {
  return { kind: 'timeout', message: cpuMessage(over.usedMs, over.budgetMs), cpuTimeMs: over.budgetMs, cpuUsedMs: over.usedMs };
}

/** Output (or the completion value) past maxOutputBytes. */
export function outputLimitFailure(limit: number, what = 'captured output'): Failure {
  return { kind: 'output-limit', message: `${what} exceeded maxOutputBytes (${limit} bytes); the output that fit is kept` };
}

/** A limit's message, said of an environment that was idle when it was crossed. */
export function idle(over: { message: string } | undefined): string | undefined {
  return over === undefined ? undefined : `${over.message} while idle`;
}

/** How a process ended, as a phrase: "was killed by SIGKILL", "exited with code 1". */
export function describeHow(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
}

/** The end of the carrier's stderr as a parenthesis, or nothing when it wrote none. */
export function stderrNote(stderrTail: string): string {
  const text = stderrTail.trim();
  return text === '' ? '' : ` (stderr: ${text.slice(-500)})`;
}

/** The fields of a worker-exit failure for a carrier that ended before the program finished. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null, stderrTail: string): Partial<Failure> {
  const heap = /heap out of memory|Reached heap limit/.test(stderrTail) ? ' after reaching its heap limit (maxOldGenerationSizeMb)' : '';
  return { message: `the carrier ${describeHow(code, signal)}${heap} before the program finished`, exitCode: code, signal, stderrTail };
}

/** The result of a run whose signal was aborted before it was admitted: no process is started. */
export function abortedBeforeStart(reason: unknown): RunResult {
  return { status: 'failed', failure: abortFailure(reason), output: [], sandbox: { ...UNCONFINED, denied: false, memory: 'none', tasks: 'none', cpu: 'none', disk: 'none' }, warm: false };
}

/** The result of a run whose program a person (or the approval timeout) refused before it started: no process is started. */
export function rejectedBeforeStart(message: string, code: string): RunResult {
  return { status: 'failed', failure: { kind: 'rejected', message, code }, output: [], sandbox: { ...UNCONFINED, denied: false, memory: 'none', tasks: 'none', cpu: 'none', disk: 'none' }, warm: false };
}

/** The result of a run whose required confinement cannot be had: it never runs unconfined. */
export function sandboxUnavailable(message: string, report: SandboxSetup): RunResult {
  return { status: 'failed', failure: { kind: 'sandbox-unavailable', message }, output: [], sandbox: { ...report, denied: false, memory: 'none', tasks: 'none', cpu: 'none', disk: 'none' }, warm: false };
}
