// The CPU budget of each run and the memory limit of a carrier's whole process tree. Memory is
// bounded by a cgroup of the carrier's own where the host can make one (cgroup.ts), else by this
// watchdog sampling /proc; CPU time is always sampled from /proc (proc.ts), so it is the same
// with or without a cgroup. The host samples: the carrier cannot be trusted to report itself.
import { availableParallelism } from 'node:os';
import { confineMemory, type CarrierCgroup } from './cgroup.ts';
import { treeUsage } from './proc.ts';

/** How a carrier's memory is bounded: reported on every result as `sandbox.memory`. */
export type MemoryEnforcement = 'cgroup' | 'watchdog' | 'none';

/** The memory watchdog samples this often; a burst between two samples can overshoot the limit. */
export const MEMORY_SAMPLE_MS = 50;
/**
 * The CPU sampler looks again when the remaining budget could be spent if every core ran the
 * tree, so a hot loop is caught close to its budget; never more often than this (a /proc walk
 * costs the host a little), nor less often than MAX.
 */
const MIN_CPU_SAMPLE_MS = 10;
const MAX_CPU_SAMPLE_MS = 100;

export type Overrun =
  | { resource: 'cpu'; usedMs: number; budgetMs: number }
  | { resource: 'memory'; usedBytes: number; limitMb: number };

/** One carrier's resource limits, from its start to its end. */
export class ResourceGuard {
  readonly memory: MemoryEnforcement;
  readonly #pid: number | undefined;
  readonly #limitMb: number | null;
  readonly #cgroup: CarrierCgroup | undefined;
  /** Why the cgroup could not be had, when the watchdog stands in for it. */
  readonly fallback: string | undefined;

  /** `maxMemoryMb` null: no memory limit. The carrier must be idle (no program started yet). */
  constructor(pid: number | undefined, maxMemoryMb: number | null) {
    this.#pid = pid;
    this.#limitMb = maxMemoryMb;
    if (maxMemoryMb === null || pid === undefined) {
      this.memory = 'none';
      return;
    }
    const cgroup = confineMemory(pid, maxMemoryMb * 1024 * 1024);
    if ('unavailable' in cgroup) {
      this.memory = 'watchdog';
      this.fallback = cgroup.unavailable;
    } else {
      this.memory = 'cgroup';
      this.#cgroup = cgroup;
    }
  }

  /**
   * Starts watching one run: CPU from this moment against `cpuTimeMs` (null: no budget), and the
   * tree's resident memory when the watchdog enforces it. `onOverrun` is called once; sampling
   * stops then, or at the returned function.
   */
  watch(cpuTimeMs: number | null, onOverrun: (overrun: Overrun) => void): { stop(): void; check(): Overrun | undefined } {
    const pid = this.#pid;
    const watchMemory = this.memory === 'watchdog';
    if (pid === undefined || (cpuTimeMs === null && !watchMemory)) return { stop() {}, check: () => undefined };
    const start = treeUsage(pid).cpuMs;
    // A process that leaves the tree takes its time along; the highest total seen stands.
    let highest = start;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const cores = Math.max(1, availableParallelism());
    const sample = (): Overrun | undefined => {
      const usage = treeUsage(pid);
      highest = Math.max(highest, usage.cpuMs);
      const usedMs = Math.round(highest - start);
      if (cpuTimeMs !== null && usedMs > cpuTimeMs) return { resource: 'cpu', usedMs, budgetMs: cpuTimeMs };
      if (watchMemory && usage.rssBytes > this.#limitMb! * 1024 * 1024) return { resource: 'memory', usedBytes: usage.rssBytes, limitMb: this.#limitMb! };
      return undefined;
    };
    const schedule = (): void => {
      let delay = watchMemory ? MEMORY_SAMPLE_MS : MAX_CPU_SAMPLE_MS;
      if (cpuTimeMs !== null) {
        const remaining = cpuTimeMs - (highest - start);
        delay = Math.min(delay, Math.max(MIN_CPU_SAMPLE_MS, Math.min(MAX_CPU_SAMPLE_MS, remaining / cores)));
      }
      timer = setTimeout(tick, delay);
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
      },
      // A last look when the run has ended, so a budget spent between two samples still counts.
      check: () => (done ? undefined : sample()),
    };
  }

  /** True when the kernel killed inside this carrier's cgroup for its memory limit. */
  get oomKilled(): boolean {
    return this.#cgroup?.oomKilled() ?? false;
  }

  /** Removes the cgroup; call once the process tree is gone. */
  release(): void {
    this.#cgroup?.remove();
  }
}

/** The failure message of a CPU overrun: names the budget and what was used. */
export function cpuMessage(usedMs: number, budgetMs: number): string {
  return `the program used ${grouped(usedMs)} ms of CPU time, over its cpuTimeMs budget of ${grouped(budgetMs)} ms`;
}

/** The failure message of a memory overrun, from the watchdog (with what it saw) or the cgroup. */
export function memoryMessage(limitMb: number, usedBytes?: number): string {
  return usedBytes === undefined
    ? `the carrier's process tree reached its maxMemoryMb limit of ${grouped(limitMb)} MiB and the kernel killed it (cgroup memory.max)`
    : `the carrier's process tree used ${grouped(Math.round(usedBytes / 1024 / 1024))} MiB of resident memory, over its maxMemoryMb limit of ${grouped(limitMb)} MiB, and was killed`;
}

function grouped(value: number): string {
  return value.toLocaleString('en-US');
}
