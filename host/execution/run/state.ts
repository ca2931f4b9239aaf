// One run's progress, shared by its steps: the first reason to stop is kept (a timeout stays a
// timeout even when the kill that follows ends the process), and `stopped` resolves once the run
// has either failed or had the carrier's reply.
import type { Failure } from '../failures.ts';

/** The reason a run's `ended` signal is aborted with: nothing reads it. */
const RUN_ENDED = 'the run ended';

/** The error a call made after its run ended is rejected with. */
export function evaluationEnded(message: string): Error {
  return Object.assign(new Error(message), { code: 'PTC_EVALUATION_ENDED' });
}

export class RunState {
  /** The first reason the run stopped, when it failed. */
  failure: Failure | undefined;
  /** Whether the run has ended, failed or not: later calls and output are refused. */
  settled = false;
  /** Whether the program's own code has started (the handshake and the proxy are behind it). */
  codeStarted = false;
  /** Whether the environment initializer runs before the program and has not yet finished. */
  initializing: boolean;
  /**
   * Fires when the run ends, so a call waiting for approval stops waiting. Aborted with a reason
   * of its own: without one, abort() builds a DOMException (and its stack) on every run.
   */
  readonly ended = new AbortController();
  readonly stopped: Promise<void>;
  #resolve!: () => void;

  constructor(initializing: boolean) {
    this.initializing = initializing;
    this.stopped = new Promise<void>((resolve) => {
      this.#resolve = resolve;
    });
  }

  /** Ends the run with a failure, unless an earlier one is already its reason. */
  stop(reason: Failure): void {
    this.failure ??= reason;
    this.settled = true;
    this.end();
    this.#resolve();
  }

  /** Ends the run with the carrier's reply, unless it has stopped already. */
  complete(): void {
    if (this.settled) return;
    this.settled = true;
    this.#resolve();
  }

  /** Releases whatever still waits on the run (idempotent). */
  end(): void {
    this.ended.abort(RUN_ENDED);
  }
}
