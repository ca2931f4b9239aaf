// A retained carrier spends most of its life idle, between an agent's turns (seconds to minutes of
// model latency). V8 keeps the young generation it grew while running and the old generation's
// free pages; a memory-reducing collection gives them back (~3 MB of an idle carrier's RSS). So
// once a retained carrier has been idle for TRIM_DELAY_MS, it collects once, off any run's path.
import v8 from 'node:v8';
import vm from 'node:vm';
import { apply, getPrototypeOf } from '../hardening/intrinsics.ts';

/** Long enough that back-to-back runs (a loop of tool-driven turns) never pay for it. */
export const TRIM_DELAY_MS = 200;

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

// Captured before any program exists: a program may replace setTimeout or Timeout.prototype.unref.
const setTimer = setTimeout;
const clearTimer = clearTimeout;
const probe = setTimer(() => {}, 0);
const unrefTimer = (getPrototypeOf(probe) as { unref: () => unknown }).unref;
clearTimer(probe);

// Captured before any program exists: a program may replace the modules' exports.
const setFlags = v8.setFlagsFromString;
const runInNewContext = vm.runInNewContext;
let collect: Collect | undefined;

// V8's collector function, from a throwaway context: --expose-gc only adds `gc` to contexts created
// while it is set, so neither the carrier's realm nor a program's ever has one. Made at the first
// idle spell, not at start-up: the context costs ~1.5 ms, and most carriers never idle retained.
function collector(): Collect {
  if (collect !== undefined) return collect;
  setFlags('--expose-gc');
  try {
    collect = runInNewContext('gc') as Collect;
  } finally {
    setFlags('--no-expose-gc');
  }
  return collect;
}

let timer: ReturnType<typeof setTimeout> | undefined;

/** Collects once after TRIM_DELAY_MS unless a run starts first; the timer never keeps the carrier alive. */
export function trimWhenIdle(): void {
  cancelTrim();
  timer = setTimer(trim, TRIM_DELAY_MS);
  apply(unrefTimer, timer, []);
}

/** Called when a run starts: the collection waits for the next idle spell. */
export function cancelTrim(): void {
  if (timer === undefined) return;
  clearTimer(timer);
  timer = undefined;
}

// Node 24+ (V8 13) takes the memory-reducing flavor. Older V8s ignore it, and their options form
// then scans the stack conservatively and may keep garbage alive: they get the plain full collection.
const MEMORY_REDUCING = Number(process.versions.node.split('.')[0]) >= 24;

function trim(): void {
  timer = undefined;
  const gc = collector();
  if (MEMORY_REDUCING) gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  else (gc as () => void)();
}
