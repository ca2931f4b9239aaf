// The reasons from outside the program to stop a run: its elapsed deadline (held while a call
// waits for approval), the caller's abort signal, and its CPU and disk limits.
import type { CpuOverrun, ResourceLimits, RunWatch } from '../../../supervision/resources/guard.ts';
import { startDeadline, type Deadline } from '../deadline.ts';
import { abortFailure, timeoutFailure } from '../failures.ts';
import type { Execution } from './execution.ts';
import { overrunFailure } from './outcome.ts';
import type { RunState } from './state.ts';

/** Starts the run's deadline and listens to its signal; `disarm` undoes both. */
export function armDeadline(execution: Execution, state: RunState): { deadline: Deadline; disarm(): void } {
  const deadline = startDeadline(execution.timeoutMs, () => state.stop(timeoutFailure(execution.timeoutMs!, state.codeStarted)));
  const onAbort = (): void => state.stop(abortFailure(execution.signal!.reason));
  execution.signal?.addEventListener('abort', onAbort, { once: true });
  return {
    deadline,
    disarm() {
      deadline.clear();
      execution.signal?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * The run's CPU budget and disk limit. The budget counts from the carrier's `started` notice (the
 * run's own code starting): start-up, the handshake and the carrier's set-up for the run are not
 * the program's. Over it the tree is killed at once: a hot loop cannot take a cooperative stop, and
 * a busy child would outlive one.
 */
export class ResourceWatch {
  readonly #limits: ResourceLimits;
  readonly #kill: () => void;
  readonly #state: RunState;
  #watch: RunWatch | undefined;

  constructor(limits: ResourceLimits, kill: () => void, state: RunState) {
    this.#limits = limits;
    this.#kill = kill;
    this.#state = state;
  }

  /** Starts counting; true when the carrier must announce its start (something counts from it). */
  start(cpuTimeMs: number | null): boolean {
    this.#watch = this.#limits.watch(cpuTimeMs, (over) => this.#overrun(over));
    return this.#watch.started !== undefined;
  }

  /** The carrier's notice that the program's own code started. */
  started(): void {
    this.#watch?.started?.();
  }

  /** A last look once the run has ended (`reportedCpuMs`: the carrier's own count, RunOutcome.cpuMs): a CPU overrun, a disk fill between two samples, or a limit the kernel kept since the last look at its events fails a run that had not failed. */
  settle(reportedCpuMs?: number): void {
    const late = this.#state.failure === undefined ? this.#watch?.check(reportedCpuMs) : undefined;
    if (late !== undefined) this.#overrun(late);
    if (this.#state.failure === undefined && this.#limits.checkLimits()) {
      const over = this.#limits.overLimit()!;
      this.#state.stop({ kind: 'worker-exit', exitCode: null, signal: null, ...over });
    }
    this.#watch?.stop();
  }

  #overrun(over: CpuOverrun): void {
    this.#kill();
    this.#state.stop(overrunFailure(over));
  }
}
