// The warm pool: fresh, never-used carriers booted ahead of the runs that take them, so a run does
// not wait for a Node process to boot. Every run still gets a process that has run no other code.
// Carriers are pooled by recipe (launch, limits, sandbox backend and policy), so a pooled carrier
// only serves a run that would have started the same one, whichever runtime asks.
//
// A pool has a floor and a ceiling (piscina's minThreads/maxThreads), the largest any runtime that
// holds it asked for, and between them follows demand: it keeps as many carriers as runs took in
// the last DEMAND_WINDOW_MS, so a burst finds as many warm the next time (an agent's next burst of
// tool calls after a minute of thinking), and the ones past the floor end once the burst is that
// long gone. A spawn blocks the host's event loop (3 to 30 ms: the fork, the carrier's cgroups), so
// a refill waits for a moment when no run of this host awaits its reply while the pool still holds
// more than LOW_WATER booted carriers; at or below that it spawns at once, since the next runs would
// otherwise wait for a whole boot, far longer than a spawn holds the loop. Refills spawn one carrier per
// event-loop turn and boot at most as many at once as the machine has cores, so a sustained stream
// of runs keeps that many boots under way. Idle carriers are unref'd: they never keep the host
// alive, and exit by themselves when it does, as their control channels close.
import { availableParallelism, totalmem } from 'node:os';
import type { CarrierRecipe } from './confinement.ts';
import type { Carrier } from './carrier.ts';
import { Lifecycle, type Moves } from './lifecycle.ts';

/** A runtime's bounds for the pool of one recipe. */
export interface PoolSize {
  /** Carriers kept booted even when no run has come for a while. */
  min: number;
  /** Carriers kept booted at most, however many runs a burst took. */
  max: number;
}

/** How long a run taken from the pool counts as demand (see above). */
export const DEMAND_WINDOW_MS = 120_000;
/** Boots under way at once: more only compete with each other and the host for the cores. */
const BOOTS_AT_ONCE = Math.max(1, availableParallelism());
/** Booted carriers left in the pool at or below which a refill does not wait for runs in flight to end. */
const LOW_WATER = 1;

/** Runs of this host that await their results (see runBegins()). */
let running = 0;
/** Pools whose next spawn waits for the runs in flight to end. */
const deferred = new Set<Pool>();
/** Holds on every pool's boots (see pauseBoots()). */
let paused = 0;

/**
 * Whether a pool starts carriers, as one state; enter() makes its moves:
 * - open: it boots carriers as its target asks
 * - deferred: its next boot waits for the runs in flight to end (while it holds more than LOW_WATER booted carriers)
 * - failing: a pooled carrier failed to boot; none is started until a run takes one (no spawn loop)
 * - released: no runtime holds it any more; its carriers are ending
 */
export type PoolState = 'open' | 'deferred' | 'failing' | 'released';

/** The moves between pool states, the only ones made. */
export const POOL_MOVES: Moves<PoolState> = {
  open: ['deferred', 'failing', 'released'],
  deferred: ['open', 'failing', 'released'],
  failing: ['open', 'released'],
  released: [],
};

interface Pool {
  readonly recipe: CarrierRecipe;
  readonly lifecycle: Lifecycle<PoolState>;
  /** Unused carriers, booted or booting, oldest first. */
  readonly idle: Carrier[];
  /** The bounds of each runtime that holds this pool. */
  readonly holders: PoolSize[];
  /** When recent runs took a carrier (performance.now()), oldest first. */
  readonly takes: number[];
  /** How many carriers of this pool await their handshake (taken ones included): a count, not a state. */
  booting: number;
  /** The turn of upkeep queued by schedule(), if one is. */
  upkeep: NodeJS.Immediate | undefined;
  shrink: NodeJS.Timeout | undefined;
  /** warm() callers, told once the pool holds its target of booted carriers. */
  readonly waiters: Array<() => void>;
}

const pools = new Map<string, Pool>();

function poolOf(recipe: CarrierRecipe): Pool {
  let pool = pools.get(recipe.key);
  if (pool === undefined) {
    pool = { recipe, lifecycle: new Lifecycle<PoolState>('warm pool', 'open', POOL_MOVES), idle: [], holders: [], takes: [], booting: 0, upkeep: undefined, shrink: undefined, waiters: [] };
    pools.set(recipe.key, pool);
  }
  return pool;
}

/** The one place a pool changes state: it is in `deferred` (the pools a run's end refills) exactly while it is deferred. */
function enter(pool: Pool, next: PoolState): void {
  pool.lifecycle.to(next);
  if (next === 'deferred') deferred.add(pool);
  else deferred.delete(pool);
}

/** A booted carrier, its handshake accepted and its channel open. */
const isBooted = (carrier: Carrier): boolean => carrier.state === 'ready';
/** A carrier still booting or booted: one a run could use. */
const isLive = (carrier: Carrier): boolean => carrier.state === 'booting' || carrier.state === 'ready';

/** Drops the idle carriers no run can use: exited ones, and ones whose channel closed for a breach (ended here). */
function prune(pool: Pool): void {
  for (let index = pool.idle.length - 1; index >= 0; index--) {
    const carrier = pool.idle[index]!;
    if (isLive(carrier)) continue;
    pool.idle.splice(index, 1);
    if (carrier.state === 'closed') void carrier.terminate(0);
  }
}

/** The number of carriers this pool should hold now: recent demand, within its bounds. */
function target(pool: Pool): number {
  const since = performance.now() - DEMAND_WINDOW_MS;
  while (pool.takes.length > 0 && pool.takes[0]! < since) pool.takes.shift();
  let min = 0;
  let max = 0;
  for (const size of pool.holders) {
    min = Math.max(min, size.min);
    max = Math.max(max, size.max);
  }
  return Math.min(max, Math.max(min, pool.takes.length));
}

/** Refills (or trims) the pool in a later turn of the event loop; never in the caller's. */
function schedule(pool: Pool): void {
  if (pool.upkeep !== undefined || pool.lifecycle.state === 'released') return;
  pool.upkeep = setImmediate(() => {
    pool.upkeep = undefined;
    step(pool);
  });
}

/** One turn of upkeep: drop dead carriers, end the excess, start at most one boot. */
function step(pool: Pool): void {
  if (pool.holders.length === 0) return;
  prune(pool);
  const wanted = target(pool);
  while (pool.idle.length > wanted) void pool.idle.shift()!.terminate(0);
  if (pool.idle.length < wanted && pool.booting < BOOTS_AT_ONCE && pool.lifecycle.state !== 'failing' && paused === 0 && !defer(pool)) {
    pool.idle.push(boot(pool));
    if (pool.idle.length < wanted) schedule(pool);
  }
  if (pool.takes.length > 0) armShrink(pool);
  settleWaiters(pool);
}

/**
 * Holds every pool's next boot until the returned function is called: a spawn holds this
 * process's event loop for milliseconds, which the resident pool (host/cli/resident-daemon.ts)
 * keeps out of the window between a run's result and its client hearing the exit code.
 */
export function pauseBoots(): () => void {
  paused++;
  let resumed = false;
  return () => {
    if (resumed) return;
    resumed = true;
    if (--paused === 0) for (const pool of pools.values()) schedule(pool);
  };
}

/** Whether the pool's next spawn waits for the runs in flight to end: it does while the pool holds more than LOW_WATER booted carriers. */
function defer(pool: Pool): boolean {
  let ready = 0;
  for (const carrier of pool.idle) if (isBooted(carrier)) ready++;
  const waits = running > 0 && ready > LOW_WATER;
  if (waits && pool.lifecycle.state !== 'deferred') enter(pool, 'deferred');
  else if (!waits && pool.lifecycle.state === 'deferred') enter(pool, 'open');
  return waits;
}

/** Marks a run of this host in flight until the returned function is called: refills and retirements wait for none to be. */
export function runBegins(): () => void {
  running++;
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    running--;
    if (running > 0) return;
    for (const pool of deferred) schedule(pool);
    scheduleRetirements();
  };
}

/** Kills of finished per-call carriers waiting for no run to await its reply, oldest first. */
const retiring: Array<() => void> = [];
/** Halted carriers kept waiting at most, one per GiB of memory (4 to 32, as the pool's default
 * ceiling): a burst of that many back-to-back runs kills none in its window; past it the oldest is
 * killed even while runs are in flight. */
const MAX_RETIRING = Math.min(32, Math.max(4, Math.floor(totalmem() / 2 ** 30)));
let retirementsScheduled = false;

/**
 * For a per-call carrier that has sent its result: resolves when its kill may go out without
 * landing in another run's window. A killed process's teardown (its address space unmapped, the
 * tree walk, bwrap's exit) takes a core for milliseconds; a caller that starts its next run as soon
 * as it has this one's result would otherwise wait behind it. So the kill waits for a turn of the
 * event loop in which no run of this host awaits its reply; at most MAX_RETIRING halted carriers
 * wait, the oldest going first past that. `now()` lets it go at once (dispose(), a second terminate).
 */
export function retirement(): { ready: Promise<void>; now(): void } {
  let release!: () => void;
  const ready = new Promise<void>((resolve) => {
    release = resolve;
  });
  const go = (): void => {
    const index = retiring.indexOf(go);
    if (index === -1) return;
    retiring.splice(index, 1);
    release();
  };
  retiring.push(go);
  while (retiring.length > MAX_RETIRING) retiring[0]!();
  scheduleRetirements();
  return { ready, now: go };
}

/** In a later turn (after the caller has its result and has perhaps begun its next run): releases the kills if no run is in flight. */
function scheduleRetirements(): void {
  if (retirementsScheduled || retiring.length === 0) return;
  retirementsScheduled = true;
  setImmediate(() => {
    retirementsScheduled = false;
    if (running === 0) for (const go of retiring.slice()) go();
  });
}

/** Starts one pooled carrier; its handshake lets the next boot begin. */
function boot(pool: Pool): Carrier {
  const carrier = pool.recipe.create();
  // A warmUp() caller waits for it: the host must not exit under that await.
  if (pool.waiters.length === 0) carrier.unref();
  pool.booting++;
  carrier.handshake().then(
    () => {
      // The run that takes this carrier starts its disk count from here rather than walk /proc
      // itself. Not while a run awaits its reply: its result would wait for the walk.
      if (running === 0) carrier.connection.countIdle?.();
    },
    () => {
      // Its failure is the next run's to report (it boots its own carrier); the pool stops trying.
      // A carrier that answered with a bad handshake may still be running: it is ended here.
      if (pool.lifecycle.state !== 'released' && pool.lifecycle.state !== 'failing') enter(pool, 'failing');
      const index = pool.idle.indexOf(carrier);
      if (index !== -1) {
        pool.idle.splice(index, 1);
        void carrier.terminate(0);
      }
    },
  ).finally(() => {
    pool.booting--;
    schedule(pool);
  });
  return carrier;
}

/** Once the burst that raised the target has left the demand window, the excess is ended. */
function armShrink(pool: Pool): void {
  if (pool.shrink !== undefined) return;
  pool.shrink = setTimeout(() => {
    pool.shrink = undefined;
    step(pool);
  }, DEMAND_WINDOW_MS);
  pool.shrink.unref();
}

function settleWaiters(pool: Pool): void {
  if (pool.waiters.length === 0) return;
  const ready = pool.idle.filter(isBooted).length;
  if (pool.holders.length === 0 || pool.lifecycle.state === 'failing' || ready >= target(pool)) {
    for (const carrier of pool.idle) carrier.unref();
    for (const waiter of pool.waiters.splice(0)) waiter();
  }
}

/** For `ptc run`: one carrier booted for this recipe before anything holds its pool. */
export function prestart(recipe: CarrierRecipe): void {
  const pool = poolOf(recipe);
  if (pool.idle.some(isLive)) return;
  pool.idle.push(boot(pool));
}

/**
 * A carrier for one run: a booted one from the pool when there is one (`warm`), else one still
 * booting, else a new one. Its replacement is not started here: see replenish().
 */
export function takeCarrier(recipe: CarrierRecipe): { carrier: Carrier; warm: boolean } {
  const pool = pools.get(recipe.key);
  if (pool === undefined) return { carrier: recipe.create(), warm: false };
  pool.takes.push(performance.now());
  if (pool.lifecycle.state === 'failing') enter(pool, 'open');
  prune(pool);
  const index = pool.idle.findIndex(isBooted);
  const taken = pool.idle.splice(index === -1 ? 0 : index, 1)[0];
  if (taken === undefined) return { carrier: recipe.create(), warm: false };
  taken.ref();
  return { carrier: taken, warm: isBooted(taken) };
}

/**
 * Refills the pool a run took from, once that run has its result: spawning a carrier blocks the
 * host's event loop for 3 to 10 ms, which the run's own reply would otherwise wait behind.
 */
export function replenish(recipe: CarrierRecipe): void {
  const pool = pools.get(recipe.key);
  if (pool !== undefined) schedule(pool);
}

/** Declares a runtime's interest in this recipe's pool; the returned function withdraws it, and ends the pool's carriers when no one else holds it. */
export function holdPool(recipe: CarrierRecipe, size: PoolSize, graceMs: number): () => Promise<void> {
  const pool = poolOf(recipe);
  const held: PoolSize = { min: size.min, max: size.max };
  pool.holders.push(held);
  // The first carrier boots now, as the runtime is created: its first run, often made at once,
  // takes it half-booted rather than boot a second one beside it.
  if (size.min > 0 && !pool.idle.some(isLive)) pool.idle.push(boot(pool));
  schedule(pool);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    pool.holders.splice(pool.holders.indexOf(held), 1);
    if (pool.holders.length > 0) return schedule(pool);
    if (pools.get(recipe.key) === pool) pools.delete(recipe.key);
    enter(pool, 'released');
    clearTimeout(pool.shrink);
    clearImmediate(pool.upkeep);
    pool.upkeep = undefined;
    settleWaiters(pool);
    await Promise.all(pool.idle.splice(0).map((carrier) => carrier.terminate(graceMs)));
  };
}

/** Resolves once the pool of this recipe holds its target of booted carriers (or nothing holds it, or its carriers fail to boot). */
export function warmPool(recipe: CarrierRecipe): Promise<void> {
  const pool = pools.get(recipe.key);
  if (pool === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    pool.waiters.push(resolve);
    for (const carrier of pool.idle) carrier.ref();
    schedule(pool);
  });
}

// A host that exits normally takes its pooled carriers (and their private temp directories) with
// it at once rather than leaving them to notice the closed channel.
process.once('exit', () => {
  for (const pool of pools.values()) for (const carrier of pool.idle) carrier.killNow();
});
