// Failures are data with a kind. These constructors keep the messages consistent wherever the
// same kind of failure is detected.
import type { ErrorInfo, SourceLocation } from '../../wire/messages.ts';

export type FailureKind =
  | 'exception'
  | 'timeout'
  | 'abort'
  | 'protocol'
  | 'sandbox-unavailable'
  | 'worker-exit'
  | 'invalid-output'
  | 'output-limit'
  | 'divergence'
  | 'rejected';

export interface Failure {
  kind: FailureKind;
  message: string;
  /** exception: the thrown error's name, stack (program frames only), location and source excerpt. */
  name?: string;
  stack?: string;
  location?: SourceLocation;
  excerpt?: string;
  /** exception from a binding: which binding, and the host error's code. */
  binding?: string;
  code?: string;
  /** timeout: the deadline that elapsed, in ms. */
  timeoutMs?: number;
  /** timeout of the CPU budget: the budget (cpuTimeMs) and the CPU time the run had used, in ms. */
  cpuTimeMs?: number;
  cpuUsedMs?: number;
  /** worker-exit over the memory limit: the limit, in MiB. */
  maxMemoryMb?: number;
  /** worker-exit over the task limit: the limit, in tasks (threads and processes). */
  maxTasks?: number;
  /** worker-exit over the disk limit: the limit, in MiB. */
  maxDiskMb?: number;
  /** worker-exit: how the carrier ended and the end of its stderr. */
  exitCode?: number | null;
  signal?: string | null;
  stderrTail?: string;
  /** invalid-output: the path of the first lossy value. */
  path?: string;
  /** divergence: the journal's position, the call it holds there, and what the program did instead (absent: it made no call). */
  position?: number;
  expected?: { binding: string; args: string };
  actual?: { binding: string; args: string };
  /**
   * exception and invalid-output: the diagnostic did not fit (maxOutputBytes, or one control
   * message) and its message, stack or path holds only the part of it that did.
   */
  truncated?: true;
  /** Retained runs: whether the environment's variables survived this failure. */
  state?: 'preserved' | 'cleared';
}

export function exceptionFailure(error: ErrorInfo): Failure {
  const failure: Failure = { kind: 'exception', message: error.message, name: error.name };
  if (error.stack !== undefined) failure.stack = error.stack;
  if (error.location !== undefined) failure.location = error.location;
  if (error.excerpt !== undefined) failure.excerpt = error.excerpt;
  if (error.binding !== undefined) failure.binding = error.binding;
  if (error.code !== undefined) failure.code = error.code;
  return failure;
}

export function timeoutFailure(timeoutMs: number, started: boolean): Failure {
  const phase = started ? 'during execution' : 'before code started';
  return { kind: 'timeout', message: `execution timed out ${phase} (deadline ${timeoutMs} ms elapsed)`, timeoutMs };
}

export function abortFailure(reason: unknown): Failure {
  const detail = reason instanceof Error && reason.name !== 'AbortError' ? `: ${reason.message}` : typeof reason === 'string' ? `: ${reason}` : '';
  return { kind: 'abort', message: `execution aborted${detail}` };
}

export function protocolFailure(message: string): Failure {
  return { kind: 'protocol', message };
}
