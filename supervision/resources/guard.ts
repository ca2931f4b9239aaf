// The CPU budget of each run and the memory and disk limits of a carrier's whole process tree.
// Memory is bounded by a cgroup of the carrier's own where the host can make one (cgroup.ts), else
// by this watchdog sampling /proc; CPU time is always sampled from /proc (proc.ts), so it is the
// same with or without a cgroup; disk is watched from /proc and the writable directories
// (supervision/disk-usage.ts, which the relay uses too). The host samples: the carrier
// cannot be trusted to report itself.
import { availableParallelism } from 'node:os';
import { DiskWatch, diskMessage, ramBackedDirectories, type DiskUsage } from '../disk-usage.ts';
import { confineMemory, type CarrierCgroup } from './cgroup.ts';
import { treeMemory, type MemoryUsage } from './held.ts';
import { treeUsage } from './proc.ts';

/** How a carrier's memory is bounded: reported on every result as `sandbox.memory`. */
export type MemoryEnforcement = 'cgroup' | 'watchdog' | 'none';
/** How a carrier's disk use is bounded: reported on every result as `sandbox.disk`. */
export type DiskEnforcement = 'watchdog' | 'none';

/** The limits of one carrier's tree. */
export interface TreeLimits {
  /** null: no memory limit. */
  maxMemoryMb: number | null;
  /** null: no disk limit. */
  maxDiskMb: number | null;
  /** The directories the program may write on this machine (those on a RAM file system are walked for maxDiskMb). */
  writable: readonly string[];
  /** The tree's storage writes, taken while it was idle and had run no program (see DiskWatch). */
  storageBase?: number;
}

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
/**
 * CPU the carrier may spend on a run before its own code starts (a new evaluator, imports), not
 * charged to the budget. The carrier says when that code starts; it is not trusted to say so at
 * all, or on time, so past this much the set-up is charged as if the code had started: a carrier
 * that never says is stopped like one that does, this much later. The set-up costs 5 to 200 ms
 * (Node's REPL loaded and compiled for a first run on a loaded machine: 160 ms seen in CI).
 */
export const SET_UP_ALLOWANCE_MS = 500;

/** One run's watch: see ResourceLimits.watch. */
export interface RunWatch {
  started?(): void;
  stop(): void;
  check(): CpuOverrun | undefined;
}

export interface CpuOverrun {
  usedMs: number;
  budgetMs: number;
}

/** What a run sees of one carrier's limits, wherever its tree is measured: by ResourceGuard on
 * this machine, or by the relay's on the far side (host/worker/transports/relayed.ts). */
export interface ResourceLimits {
  readonly memory: MemoryEnforcement;
  readonly disk: DiskEnforcement;
  /** started(): the program's own code began (the CPU budget counts from there); absent when
   * nothing here counts from it, so the carrier need not send its notice. */
  watch(cpuTimeMs: number | null, onOverrun: (overrun: CpuOverrun) => void): RunWatch;
  /** Why the tree died, when it died for a limit measured here. */
  overLimit(): { message: string; maxMemoryMb?: number; maxDiskMb?: number } | undefined;
  /** A last look at the disk use at the end of a run: true when it is over the limit. */
  checkDisk(): boolean;
  release(): void;
}

/** One carrier's resource limits, from its start to its end. */
export class ResourceGuard implements ResourceLimits {
  readonly memory: MemoryEnforcement;
  readonly disk: DiskEnforcement;
  readonly #pid: number | undefined;
  readonly #limitMb: number | null;
  readonly #diskMb: number | null;
  readonly #cgroup: CarrierCgroup | undefined;
  readonly #disk: DiskWatch | undefined;
  /** What the disk watch saw when it killed the tree. */
  #overDisk: DiskUsage | undefined;
  #memoryTimer: NodeJS.Timeout | undefined;
  #sampleMemory: (() => void) | undefined;
  #busy = false;
  #released = false;
  /** What the watchdog saw when it killed the tree. */
  #overBytes: MemoryUsage | undefined;

  /**
   * The carrier must be idle (no program started yet). Over a limit the watchdog calls `kill`;
   * the exit that follows is explained by overLimit().
   */
  constructor(pid: number | undefined, { maxMemoryMb, maxDiskMb, writable, storageBase }: TreeLimits, kill: () => void) {
    this.#pid = pid;
    this.#limitMb = maxMemoryMb;
    this.#diskMb = maxDiskMb;
    if (maxDiskMb === null || pid === undefined) this.disk = 'none';
    else {
      this.disk = 'watchdog';
      this.#disk = new DiskWatch(pid, maxDiskMb * 1024 * 1024, ramBackedDirectories(writable), (usage) => {
        this.#overDisk = usage;
        kill();
      }, storageBase);
    }
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
   * Starts one run: memory is sampled more often until stop(), and CPU time counts against
   * `cpuTimeMs` (null: no budget) from started(), the run's own code starting, or from this moment
   * less SET_UP_ALLOWANCE_MS, whichever is more. `onOverrun` is called once, then sampling of CPU
   * stops; check() takes a last look when the run has ended.
   */
  watch(cpuTimeMs: number | null, onOverrun: (overrun: CpuOverrun) => void): RunWatch {
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
    let codeStart: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const cores = Math.max(1, availableParallelism());
    const charged = (): number => Math.max(0, highest - start - SET_UP_ALLOWANCE_MS, codeStart === undefined ? 0 : highest - codeStart);
    const sample = (): CpuOverrun | undefined => {
      highest = Math.max(highest, treeUsage(pid).cpuMs);
      const usedMs = Math.round(charged());
      return usedMs > cpuTimeMs ? { usedMs, budgetMs: cpuTimeMs } : undefined;
    };
    const schedule = (): void => {
      const remaining = cpuTimeMs - charged();
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
      started() {
        if (done || codeStart !== undefined) return;
        highest = Math.max(highest, treeUsage(pid).cpuMs);
        codeStart = highest;
      },
      stop() {
        done = true;
        clearTimeout(timer);
        stopBusy();
      },
      check: () => (done ? undefined : sample()),
    };
  }

  /** Why the tree died, when it died for the disk limit or the memory limit (the watchdog's kill, or the kernel's in the cgroup). */
  overLimit(): { message: string; maxMemoryMb?: number; maxDiskMb?: number } | undefined {
    if (this.#overDisk !== undefined) return { message: diskMessage(this.#diskMb!, this.#overDisk), maxDiskMb: this.#diskMb! };
    const memory = this.#overMemory();
    return memory === undefined ? undefined : { message: memory, maxMemoryMb: this.#limitMb! };
  }

  /** Takes a last look at the disk use, at the end of a run: true when it is over the limit (and the tree is being killed). */
  checkDisk(): boolean {
    return this.#disk?.sample() ?? false;
  }

  #overMemory(): string | undefined {
    if (this.#limitMb === null) return undefined;
    if (this.#overBytes !== undefined) return memoryMessage(this.#limitMb, this.#overBytes);
    return this.#cgroup?.oomKilled() ? memoryMessage(this.#limitMb) : undefined;
  }

  /** Stops the watchdog and removes the cgroup; call once the process tree is gone. */
  release(): void {
    this.#released = true;
    clearTimeout(this.#memoryTimer);
    this.#disk?.stop();
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
