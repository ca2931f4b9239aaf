// A run the caller can leave and come back to: `runtime.start()` returns its handle at once, and
// `run(spec, { yieldAfterMs })` returns one when the run outlives the wait. The handle keeps every
// output entry the run sends; each look (`wait`) hands out the entries no earlier look returned,
// so across the looks every entry appears exactly once, and the last look is the final result.
// Async iteration is a separate reader: each iterator sees every entry from the first.
import type { OutputEntry } from '../execution/output-ledger.ts';
import type { RunResult } from '../execution/owners.ts';
import { show } from './config.ts';

/** A look at a run still in progress: the output since the previous look. */
export interface RunningLook {
  status: 'running';
  runId: string;
  output: OutputEntry[];
}

/** What `run(spec, { yieldAfterMs })` returns when the run has not ended by then: the output so far and the handle. */
export interface YieldedRun extends RunningLook {
  handle: RunHandle;
}

/** A run in progress: look at it, stream its output, or stop it. */
export interface RunHandle extends AsyncIterable<OutputEntry> {
  readonly runId: string;
  /** The final result with all of its output; settles when the run ends. */
  readonly result: Promise<RunResult>;
  /**
   * The output since the last look: a `running` look once `timeoutMs` passes (or the program calls
   * `yieldControl()`), else the final result, whose `output` holds only what no earlier look
   * returned. Without `timeoutMs` it waits for the end. After the final look, it answers that
   * result again with no output.
   */
  wait(timeoutMs?: number): Promise<RunningLook | RunResult>;
  /** Stops the run (an `abort` failure, like the signal's) and resolves with its final result. */
  cancel(reason?: string): Promise<RunResult>;
}

/** The handle's side the runtime feeds: output entries, the program's yields, and its end. */
export interface HandleFeed {
  readonly handle: RunHandle;
  /** Receives each output entry as the run sends it (before the caller's own onOutput). */
  output(entry: OutputEntry): void;
  /** The program asked to hand control back now: the pending look (or the next one) returns at once. */
  yielded(): void;
}

/** Checks a `yieldAfterMs` or `timeoutMs` of a look: a non-negative integer of milliseconds. */
export function lookTime(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a non-negative integer of milliseconds, got ${show(value)}`);
  return value;
}

/** Makes the handle of a run: `begin` starts it with the signal cancel() aborts and the feed's output listener. */
export function runHandle(runId: string, begin: (signal: AbortSignal, feed: HandleFeed) => Promise<RunResult>, given?: AbortSignal): HandleFeed {
  const controller = new AbortController();
  const signal = given === undefined ? controller.signal : AbortSignal.any([given, controller.signal]);
  const entries: OutputEntry[] = [];
  let looked = 0;
  let yieldRequested = false;
  let finalLooked: RunResult | undefined;
  // Woken on each entry, on a yield and at the end: the readers waiting on it look again.
  let wake: () => void = () => {};
  let changed = new Promise<void>((resolve) => (wake = resolve));
  const notify = (): void => {
    const woken = wake;
    changed = new Promise<void>((resolve) => (wake = resolve));
    woken();
  };
  let ended = false;

  /** The entries since the last look, adjacent text of one stream merged as a result's output is. */
  const takeNew = (): OutputEntry[] => {
    const taken = mergeText(entries.slice(looked));
    looked = entries.length;
    return taken;
  };

  const handle: RunHandle = {
    runId,
    result: undefined as unknown as Promise<RunResult>,
    async wait(timeoutMs) {
      if (timeoutMs !== undefined) lookTime(timeoutMs, 'ptc wait(): timeoutMs');
      let timedOut = false;
      // The timer, an entry, a yield and the end all wake the look through `changed`, so a look
      // waits on one promise at a time however much the run prints.
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
        timedOut = true;
        notify();
      }, timeoutMs);
      try {
        for (;;) {
          if (ended) {
            const result = await handle.result;
            if (finalLooked !== undefined) return { ...finalLooked, output: [] };
            finalLooked = { ...result, output: takeNew() };
            return finalLooked;
          }
          if (yieldRequested || timedOut) {
            yieldRequested = false;
            return { status: 'running', runId, output: takeNew() };
          }
          await changed;
        }
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(reason = 'cancelled by the caller') {
      controller.abort(new Error(reason));
      return handle.result;
    },
    async *[Symbol.asyncIterator]() {
      for (let at = 0; ; ) {
        while (at < entries.length) yield entries[at++]!;
        if (ended) return;
        await changed;
      }
    },
  };
  const feed: HandleFeed = {
    handle,
    output(entry) {
      entries.push(entry);
      notify();
    },
    yielded() {
      yieldRequested = true;
      notify();
    },
  };
  const result = begin(signal, feed).finally(() => {
    ended = true;
    notify();
  });
  // The handle's owner may never look at it: a rejection (caller misuse) is theirs to see through result or wait().
  result.catch(() => {});
  Object.defineProperty(handle, 'result', { value: result, enumerable: true });
  return feed;
}

/** Output entries with adjacent text of one stream joined into one entry. */
export function mergeText(entries: readonly OutputEntry[]): OutputEntry[] {
  const merged: OutputEntry[] = [];
  for (const entry of entries) {
    const last = merged.at(-1);
    if (entry.type === 'text' && last?.type === 'text' && last.stream === entry.stream) merged[merged.length - 1] = { ...last, text: last.text + entry.text };
    else merged.push({ ...entry });
  }
  return merged;
}
