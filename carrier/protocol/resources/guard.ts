// The CPU budget of each run and the memory limit of a carrier's whole process tree. Memory is
// bounded by a cgroup of the carrier's own where the host can make one (cgroup.ts), else by this
// watchdog sampling /proc; CPU time is always sampled from /proc (proc.ts), so it is the same
// with or without a cgroup. The host samples: the carrier cannot be trusted to report itself.
import { availableParallelism } from 'node:os';
import { confineMemory, type CarrierCgroup } from './cgroup.ts';
import { treeMemory, type MemoryUsage } from './held.ts';
import { treeUsage } from './proc.ts';

/** How a carrier's memory is bounded: reported on every result as `sandbox.memory`. */
export type MemoryEnforcement = 'cgroup' | 'watchdog' | 'none';

/** The memory watchdog samples this often while a run is in progress; a burst between two samples can overshoot the limit. */
export const MEMORY_SAMPLE_MS = 50;
/** And this often while a retained carrier idles: only timers the program left behind can grow it then. */
export const IDLE_MEMORY_SAMPLE_MS = 1_000;
/**
 * The CPU sampler looks again when the remaining budget could be spent if every core ran the
 * tree, so a hot loop is caught close to its budget; never more often than this (a /proc walk
 * costs the host a little), nor less often than MAX.
 */
const MIN_CPU_SAMPLE_MS = 10;
const MAX_CPU_SAMPLE_MS = 100;

export interface CpuOverrun {
  usedMs: number;
  budgetMs: number;
}

/** What a run sees of one carrier's limits, wherever its tree is measured: by ResourceGuard on
 * this machine, or by the relay's on the far side (host/worker/transports/relayed.ts). */
export interface ResourceLimits {
  readonly memory: MemoryEnforcement;
  watch(cpuTimeMs: number | null, onOverrun: (overrun: CpuOverrun) => void): { stop(): void; check(): CpuOverrun | undefined };
  overLimit(): string | undefined;
  release(): void;
}

/** One carrier's resource limits, from its start to its end. */
export class ResourceGuard implements ResourceLimits {
  readonly memory: MemoryEnforcement;
  readonly #pid: number | undefined;
  readonly #limitMb: number | null;
  readonly #cgroup: CarrierCgroup | undefined;
  #memoryTimer: NodeJS.Timeout | undefined;
  #sampleMemory: (() => void) | undefined;
  #busy = false;
  #released = false;
  /** What the watchdog saw when it killed the tree. */
  #overBytes: MemoryUsage | undefined;

  /**
   * `maxMemoryMb` null: no memory limit. The carrier must be idle (no program started yet). Over
   * the limit the watchdog calls `kill`; the exit that follows is explained by overLimit().
   */
  constructor(pid: number | undefined, maxMemoryMb: number | null, kill: () => void) {
    this.#pid = pid;
    this.#limitMb = maxMemoryMb;
    if (maxMemoryMb === null || pid === undefined) {
      this.memory = 'none';
      return;
    }
    const cgroup = confineMemory(pid, maxMemoryMb * 1024 * 1024);
    if (!('unavailable' in cgroup)) {
      this.memory = 'cgroup';
      this.#cgroup = cgroup;
      return;
    }
    // Where no cgroup can be had (cgroup.unavailable says why), the watchdog stands in.
    this.memory = 'watchdog';
    const limitBytes = maxMemoryMb * 1024 * 1024;
    const tick = (): void => {
      this.#memoryTimer = undefined;
      if (this.#released) return;
      const usage = treeMemory(pid);
      if (usage === undefined) return; // the tree is gone: nothing left to watch
      if (usage.rssBytes + usage.heldBytes > limitBytes) {
        this.#overBytes = usage;
        return kill();
      }
      this.#schedule();
    };
    this.#sampleMemory = tick;
    // Not synchronously: `kill` may reach into an owner that is still being constructed.
    this.#schedule();
  }

  #schedule(): void {
    clearTimeout(this.#memoryTimer);
    this.#memoryTimer = setTimeout(this.#sampleMemory!, this.#busy ? MEMORY_SAMPLE_MS : IDLE_MEMORY_SAMPLE_MS);
    this.#memoryTimer.unref();
  }

  /**
   * Starts one run: memory is sampled more often until stop(), and CPU time counts from this
   * moment against `cpuTimeMs` (null: no budget). `onOverrun` is called once, then sampling of
   * CPU stops; check() takes a last look when the run has ended.
   */
  watch(cpuTimeMs: number | null, onOverrun: (overrun: CpuOverrun) => void): { stop(): void; check(): CpuOverrun | undefined } {
    const pid = this.#pid;
    this.#busy = true;
    // From the idle pace to the busy one at once.
    if (this.#memoryTimer !== undefined) this.#schedule();
    const stopBusy = (): void => {
      this.#busy = false;
    };
    if (pid === undefined || cpuTimeMs === null) return { stop: stopBusy, check: () => undefined };
    const start = treeUsage(pid).cpuMs;
    // A process that leaves the tree takes its time along; the highest total seen stands.
    let highest = start;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const cores = Math.max(1, availableParallelism());
    const sample = (): CpuOverrun | undefined => {
      highest = Math.max(highest, treeUsage(pid).cpuMs);
      const usedMs = Math.round(highest - start);
      return usedMs > cpuTimeMs ? { usedMs, budgetMs: cpuTimeMs } : undefined;
    };
    const schedule = (): void => {
      const remaining = cpuTimeMs - (highest - start);
      timer = setTimeout(tick, Math.max(MIN_CPU_SAMPLE_MS, Math.min(MAX_CPU_SAMPLE_MS, remaining / cores)));
      timer.unref();
    };
    const tick = (): void => {
      if (done) return;
      const overrun = sample();
      if (overrun === undefined) return schedule();
      done = true;
      onOverrun(overrun);
    };
    schedule();
    return {
      stop() {
        done = true;
        clearTimeout(timer);
        stopBusy();
      },
      check: () => (done ? undefined : sample()),
    };
  }

  /** Why the tree died, when it died for the memory limit (the watchdog's kill, or the kernel's in the cgroup). */
  overLimit(): string | undefined {
    if (this.#limitMb === null) return undefined;
    if (this.#overBytes !== undefined) return memoryMessage(this.#limitMb, this.#overBytes);
    return this.#cgroup?.oomKilled() ? memoryMessage(this.#limitMb) : undefined;
  }

  /** Stops the watchdog and removes the cgroup; call once the process tree is gone. */
  release(): void {
    this.#released = true;
    clearTimeout(this.#memoryTimer);
    this.#cgroup?.remove();
  }
}

/** The failure message of a CPU overrun: names the budget and what was used. */
export function cpuMessage(usedMs: number, budgetMs: number): string {
  return `the program used ${grouped(usedMs)} ms of CPU time, over its cpuTimeMs budget of ${grouped(budgetMs)} ms`;
}

/**
 * The failure message of a memory overrun, from the watchdog (with what it saw, rounded up: a tree
 * just past the limit must not read as using exactly the limit) or the cgroup.
 */
export function memoryMessage(limitMb: number, used?: MemoryUsage): string {
  if (used === undefined) return `the carrier's process tree reached its maxMemoryMb limit of ${grouped(limitMb)} MiB and the kernel killed it (cgroup memory.max)`;
  const what = used.heldBytes === 0
    ? `${mib(used.rssBytes)} MiB of resident memory`
    : `${mib(used.rssBytes + used.heldBytes)} MiB of memory (${mib(used.rssBytes)} MiB resident, ${mib(used.heldBytes)} MiB in tmpfs and memfd files)`;
  return `the carrier's process tree used ${what}, over its maxMemoryMb limit of ${grouped(limitMb)} MiB, and was killed`;
}

function mib(bytes: number): string {
  return grouped(Math.ceil(bytes / 1024 / 1024));
}

function grouped(value: number): string {
  return value.toLocaleString('en-US');
}
