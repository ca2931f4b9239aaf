// Boot marks (ptc:*) time the phases of a start for `npm run bench` (test/bench/boot.ts). Only the
// bench's probe (test/bench/boot-probe.cjs, loaded with --require before any of ptc's code)
// records them: it puts its recorder under this symbol. Otherwise a mark is one property read;
// performance.mark would load perf_hooks, ~1.5 ms of every `ptc` start and every carrier boot.
const RECORDER = Symbol.for('ptc.boot-mark');

/** Marks the moment a start reaches `name` (ptc:<phase>), when the bench's probe is listening. */
export function bootMark(name: string): void {
  const record = (globalThis as Record<symbol, unknown>)[RECORDER];
  if (typeof record === 'function') record(name);
}
