// One run's view of the journal. A first attempt records each call; a resumed attempt first
// answers the program's calls from what the journal holds. Like Temporal's workflow history it is
// consumed by the re-run program, but a call is matched by binding and arguments (the oldest
// unconsumed entry with both), not by arrival order, so calls made concurrently (Promise.all)
// replay in whatever order they arrive. A call that matches nothing while answered entries are
// still unconsumed is a divergence: the program no longer does what the journal recorded.
import type { ApprovalRecord, Grant } from '../approval.ts';
import type { CallState, JournalStore, StoredCall } from './store.ts';

/** What the journal keeps of a call besides its answer. */
export interface CallDetail {
  /** The attempts at running the binding: 1, plus one for each resume that ran it again. */
  attempt?: number;
  approval?: ApprovalRecord;
  /** What reconcile answered for the call after a crash. */
  reconciled?: 'took-effect' | 'run-again' | 'fail';
  reason?: string;
}

/** What the journal says about a call the program just made. */
export type CallMatch =
  | { kind: 'answered'; call: StoredCall }
  /** Run it (again): new, or journaled without an answer (waiting for approval, or in doubt after a crash). */
  | { kind: 'run'; sequence: number; resumed: CallState | undefined; detail: CallDetail }
  | { kind: 'diverged'; message: string; position: number; expected: { binding: string; args: string }; actual: { binding: string; args: string } };

const ANSWERED: ReadonlySet<CallState> = new Set(['done', 'failed', 'rejected', 'reverted']);

export class RunJournal {
  readonly runId: string;
  readonly #store: JournalStore;
  /** Unconsumed journaled calls, oldest first. */
  readonly #unconsumed: StoredCall[];
  #nextSequence: number;
  readonly #details = new Map<number, CallDetail>();
  /** The scoped answers the journal holds (the program's approval, answers for the rest of the run), to cover the resumed run's calls again. */
  readonly grants: Array<{ binding: string; grant: Grant }> = [];

  constructor(store: JournalStore, runId: string, journaled: StoredCall[] = []) {
    this.#store = store;
    this.runId = runId;
    // Call 0 is the program's approval, never a call the program makes.
    this.#unconsumed = journaled.filter((call) => call.sequence !== 0);
    this.#nextSequence = journaled.reduce((most, call) => Math.max(most, call.sequence), 0) + 1;
    for (const call of journaled) {
      const detail = call.detail === null ? {} : (JSON.parse(call.detail) as CallDetail);
      this.#details.set(call.sequence, detail);
      const approval = detail.approval;
      if (approval?.by !== 'person' || approval.scope === 'call' || approval.decision === 'timed-out') continue;
      const grant: Grant = { decision: approval.decision, scope: 'run', runId, sequence: call.sequence, ...(approval.reason !== undefined ? { reason: approval.reason } : {}) };
      const names = call.sequence === 0 ? (JSON.parse(call.args) as string[]) : [call.binding];
      for (const binding of names) this.grants.push({ binding, grant });
    }
  }

  match(binding: string, args: string): CallMatch {
    const index = this.#unconsumed.findIndex((call) => call.binding === binding && call.args === args);
    if (index !== -1) {
      const [call] = this.#unconsumed.splice(index, 1);
      if (ANSWERED.has(call!.state)) return { kind: 'answered', call: call! };
      return { kind: 'run', sequence: call!.sequence, resumed: call!.state, detail: this.detail(call!.sequence) };
    }
    const expected = this.#unconsumed.find((call) => ANSWERED.has(call.state));
    if (expected !== undefined) {
      return {
        kind: 'diverged',
        position: expected.sequence,
        expected: { binding: expected.binding, args: expected.args },
        actual: { binding, args },
        message: `the program diverged from its journal at call ${expected.sequence}: the journal has ${describe(expected.binding, expected.args)}, the program called ${describe(binding, args)}`,
      };
    }
    return { kind: 'run', sequence: this.#nextSequence++, resumed: undefined, detail: {} };
  }

  /** Answered calls the finished program never made again, oldest first. */
  missed(): { message: string; position: number; expected: { binding: string; args: string } } | undefined {
    const expected = this.#unconsumed.find((call) => ANSWERED.has(call.state));
    if (expected === undefined) return undefined;
    return {
      position: expected.sequence,
      expected: { binding: expected.binding, args: expected.args },
      message: `the program diverged from its journal at call ${expected.sequence}: it finished without making ${describe(expected.binding, expected.args)}, which the journal has`,
    };
  }

  /** What the journal knows of call `sequence` besides its answer. */
  detail(sequence: number): CallDetail {
    return this.#details.get(sequence) ?? {};
  }

  /** Adds to a call's detail; written with the call's next record. */
  note(sequence: number, detail: CallDetail): void {
    this.#details.set(sequence, { ...this.detail(sequence), ...detail });
  }

  record(sequence: number, binding: string, args: string, state: CallState, result: string | null = null, error: string | null = null): void {
    const detail = this.#details.get(sequence);
    const text = detail === undefined || Object.keys(detail).length === 0 ? null : JSON.stringify(detail);
    this.#store.putCall({ runId: this.runId, sequence, binding, args, state, result, error, detail: text });
  }

  status(status: 'running' | 'waiting'): void {
    this.#store.setStatus(this.runId, status);
  }
}

function describe(binding: string, args: string): string {
  const text = args.length > 200 ? `${args.slice(0, 200)}…` : args;
  return binding === STEP ? `step(${text.slice(1, -1)})` : `${binding}(${text.slice(1, -1)})`;
}

/** The name under which the carrier's `step(name, fn)` asks the host, never a binding's (not an identifier). */
export const STEP = '#step';
/** The name of call 0, the program's approval (its args are the bindings it listed). */
export const PROGRAM = '#program';
