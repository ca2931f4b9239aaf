// The CPU budget of each run and the memory, task and disk limits of a carrier's whole process
// tree. Where the host can make cgroups of the carrier's own (cgroup.ts), the kernel keeps the
// memory limit (kernel memory included), the task limit, and the count of CPU time (every task that
// ever ran in the tree, exited and reparented ones included); this guard reads the kernel's count
// and its events (an OOM kill, a refused fork) and ends the run. Where it cannot, this watchdog
// samples /proc (proc.ts, held.ts) for each, and misses what docs/kernel-limits.md lists. Disk is
// watched from /proc and the writable directories either way (supervision/disk-usage.ts, which
// the relay uses too). The host measures: the carrier cannot be trusted to report itself.
import { availableParallelism } from 'node:os';
import { DiskWatch, diskMessage, ramBackedDirectories, type DiskUsage } from '../disk-usage.ts';
import { confineTree, type CarrierCgroup } from './cgroup.ts';
import { treeMemory, type MemoryUsage } from './held.ts';
import { procAvailable, treeTasks, treeUsage } from './proc.ts';

/** What keeps a limit of a carrier's tree: the kernel in the carrier's cgroup, the /proc watchdog, or nothing. */
export type Enforcement = 'cgroup' | 'watchdog' | 'none';
/** How a carrier's memory is bounded: reported on every result as `sandbox.memory`. */
export type MemoryEnforcement = Enforcement;
/** How a carrier's task count is bounded (MAX_TASKS): reported on every result as `sandbox.tasks`. */
export type TaskEnforcement = Enforcement;
/** How a carrier's CPU time is counted against cpuTimeMs: reported on every result as `sandbox.cpu` ('none' without a budget). */
export type CpuEnforcement = Enforcement;
/** How a carrier's disk use is bounded: reported on every result as `sandbox.disk`. */
export type DiskEnforcement = 'watchdog' | 'none';

/**
 * The tasks (threads and processes) a carrier's tree may hold at once. A carrier is Node with about
 * 20 threads (its thread pool, V8's workers) plus bwrap's two processes; this leaves a program room
 * for worker pools and parallel child processes, and keeps a fork bomb from the host's pid space.
 */
export const MAX_TASKS = 1024;

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
  /** The last look; `reportedMs`: the CPU the carrier says its process spent since it announced its start. */
  check(reportedMs?: number): CpuOverrun | undefined;
}

export interface CpuOverrun {
  usedMs: number;
  budgetMs: number;
}

/** Why a carrier's tree died for a limit measured here, for its failure: the message, and the limit it names. */
export interface OverLimit {
  message: string;
  maxMemoryMb?: number;
  maxDiskMb?: number;
  maxTasks?: number;
}

/** What a run sees of one carrier's limits, wherever its tree is measured: by ResourceGuard on
 * this machine, or by the relay's on the far side (host/worker/transports/relayed.ts). */
export interface ResourceLimits {
  readonly memory: MemoryEnforcement;
  readonly tasks: TaskEnforcement;
  /** What counts CPU time when a run has a budget. */
  readonly cpu: CpuEnforcement;
  readonly disk: DiskEnforcement;
  /** started(): the program's own code began (the CPU budget counts from there); absent when
   * nothing here counts from it, so the carrier need not send its notice. */
  watch(cpuTimeMs: number | null, onOverrun: (overrun: CpuOverrun) => void): RunWatch;
  /** Why the tree died, when it died for a limit measured here. */
  overLimit(): OverLimit | undefined;
  /** A last look at the disk use and the kernel's limit events at the end of a run: true when a
   * limit was crossed (and the tree is being killed; overLimit() says which). */
  checkLimits(): boolean;
  release(): void;
}

/**
 * The cgroups (tasks and CPU) a carrier enters right after its spawn, so that a run which takes it
 * from the pool does not wait for them: cgroup v1's first move of a task waits for an RCU grace
 * period (~20 ms here). Undefined where none can be made; the guard then makes its own or watches.
 */
export function spawnCgroup(pid: number | undefined): CarrierCgroup | undefined {
  if (pid === undefined || !procAvailable()) return undefined;
  const cgroup = confineTree(pid, null, MAX_TASKS);
  return 'unavailable' in cgroup ? undefined : cgroup;
}

/** One carrier's resource limits, from its start to its end. */
export class ResourceGuard implements ResourceLimits {
  readonly memory: MemoryEnforcement;
  readonly tasks: TaskEnforcement;
  readonly cpu: CpuEnforcement;
  readonly disk: DiskEnforcement;
  readonly #pid: number | undefined;
  readonly #limitMb: number | null;
  readonly #diskMb: number | null;
  readonly #cgroup: CarrierCgroup | undefined;
  readonly #disk: DiskWatch | undefined;
  readonly #kill: () => void;
  /** What the disk watch saw when it killed the tree. */
  #overDisk: DiskUsage | undefined;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;
  #released = false;
  /** What the memory watchdog saw when it killed the tree. */
  #overBytes: MemoryUsage | undefined;
  /** The kernel killed for the memory limit (OOM in the cgroup), seen by this guard. */
  #kernelOom = false;
  /** The tasks the watchdog counted, or true for the kernel's refusal, when the tree was killed for the task limit. */
  #overTasks: number | true | undefined;
  #killedForKernel = false;

  /**
   * The carrier must be idle (no program started yet). Over a limit the guard calls `kill`; the
   * exit that follows is explained by overLimit().
   */
  constructor(pid: number | undefined, { maxMemoryMb, maxDiskMb, writable, storageBase }: TreeLimits, kill: () => void, spawned?: CarrierCgroup) {
    this.#pid = pid;
    this.#limitMb = maxMemoryMb;
    this.#diskMb = maxDiskMb;
    this.#kill = kill;
    if (maxDiskMb === null || pid === undefined) this.disk = 'none';
    else {
      this.disk = 'watchdog';
      this.#disk = new DiskWatch(pid, maxDiskMb * 1024 * 1024, ramBackedDirectories(writable), (usage) => {
        this.#overDisk = usage;
        kill();
      }, storageBase);
    }
    const proc = pid !== undefined && procAvailable();
    // Where no cgroup can be had (its `unavailable` says why), the watchdog stands in for each limit.
    const cgroup = proc ? this.#confine(pid, maxMemoryMb, spawned) : undefined;
    if (cgroup !== undefined && !('unavailable' in cgroup)) this.#cgroup = cgroup;
    const keeps = this.#cgroup?.keeps ?? { memory: false, tasks: false, cpu: false };
    this.memory = maxMemoryMb === null || pid === undefined ? 'none' : keeps.memory ? 'cgroup' : 'watchdog';
    this.tasks = keeps.tasks ? 'cgroup' : proc ? 'watchdog' : 'none';
    this.cpu = keeps.cpu ? 'cgroup' : 'watchdog';
    // Not synchronously: `kill` may reach into an owner that is still being constructed.
    if (proc) this.#schedule();
  }

  /**
   * The carrier's cgroups: the ones it was spawned into (spawnCgroup: tasks and CPU, made off any
   * run's path) when no memory limit is asked for, else new ones with the limit, into which the
   * tree moves from those (removed once empty; kept if the new ones cannot be made).
   */
  #confine(pid: number, maxMemoryMb: number | null, spawned: CarrierCgroup | undefined): CarrierCgroup | { unavailable: string } {
    if (maxMemoryMb === null && spawned !== undefined) return spawned;
    const cgroup = confineTree(pid, maxMemoryMb === null ? null : maxMemoryMb * 1024 * 1024, MAX_TASKS);
    if (spawned === undefined) return cgroup;
    if ('unavailable' in cgroup) return spawned;
    spawned.remove();
    return cgroup;
  }

  /** One look at every limit this guard samples: the kernel's events, else the watchdog's counts. */
  #sample(): void {
    this.#timer = undefined;
    if (this.#released) return;
    if (this.#overKernel()) return this.#killOnce();
    const pid = this.#pid!;
    if (this.memory === 'watchdog') {
      const usage = treeMemory(pid);
      if (usage === undefined) return; // the tree is gone: nothing left to watch
      if (usage.rssBytes + usage.heldBytes > this.#limitMb! * 1024 * 1024) {
        this.#overBytes = usage;
        return this.#kill();
      }
    }
    if (this.tasks === 'watchdog') {
      const tasks = treeTasks(pid);
      if (tasks === 0) return;
      if (tasks > MAX_TASKS) {
        this.#overTasks = tasks;
        return this.#kill();
      }
    }
    this.#schedule();
  }

  /** Whether the kernel acted for a limit in the cgroup (OOM kill, refused fork): the tree goes then, as v1 kills one task only and a refused fork kills none. */
  #overKernel(): boolean {
    if (this.#cgroup === undefined) return false;
    if (this.#limitMb !== null && this.#cgroup.oomKilled()) this.#kernelOom = true;
    else if (this.#cgroup.tasksRefused()) this.#overTasks ??= true;
    else return false;
    return true;
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#sample(), this.#busy ? MEMORY_SAMPLE_MS : IDLE_MEMORY_SAMPLE_MS);
    this.#timer.unref();
  }

  /**
   * Starts one run: the limits are sampled more often until stop(), and CPU time counts against
   * `cpuTimeMs` (null: no budget) from started(), the run's own code starting, or from this moment
   * less SET_UP_ALLOWANCE_MS, whichever is more. `onOverrun` is called once, then sampling of CPU
   * stops; check() takes a last look when the run has ended.
   */
  watch(cpuTimeMs: number | null, onOverrun: (overrun: CpuOverrun) => void): RunWatch {
    const pid = this.#pid;
    this.#busy = true;
    // From the idle pace to the busy one at once.
    if (this.#timer !== undefined) this.#schedule();
    const stopBusy = (): void => {
      this.#busy = false;
    };
    if (pid === undefined || cpuTimeMs === null) return { stop: stopBusy, check: () => undefined };
    // The kernel's count where the cgroup has one: every task that ever ran there, exited and
    // reparented ones included. Else the tree's, where a process that leaves the tree takes its
    // time along, so the highest total seen stands.
    const cgroup = this.#cgroup?.keeps.cpu === true ? this.#cgroup : undefined;
    const used = (): number => cgroup?.cpuMs() ?? treeUsage(pid).cpuMs;
    const start = used();
    let highest = start;
    let codeStart: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const cores = Math.max(1, availableParallelism());
    const charged = (): number => Math.max(0, highest - start - SET_UP_ALLOWANCE_MS, codeStart === undefined ? 0 : highest - codeStart);
    const sample = (reportedMs = 0): CpuOverrun | undefined => {
      highest = Math.max(highest, used());
      // The host reads the carrier's started notice when its event loop gets to it: on a loaded
      // machine, after the program has run for a while. The carrier's own count from that notice
      // is what the program spent at least.
      const usedMs = Math.round(Math.max(charged(), reportedMs));
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
        highest = Math.max(highest, used());
        codeStart = highest;
      },
      stop() {
        done = true;
        clearTimeout(timer);
        stopBusy();
      },
      check: (reportedMs) => (done ? undefined : sample(reportedMs)),
    };
  }

  /** Why the tree died, when it died for the disk, memory or task limit (the watchdog's kill, or the kernel's in the cgroup). */
  overLimit(): OverLimit | undefined {
    if (this.#overDisk !== undefined) return { message: diskMessage(this.#diskMb!, this.#overDisk), maxDiskMb: this.#diskMb! };
    const memory = this.#overMemory();
    if (memory !== undefined) return { message: memory, maxMemoryMb: this.#limitMb! };
    if (this.#overTasks === undefined && this.#cgroup?.tasksRefused()) this.#overTasks = true;
    if (this.#overTasks !== undefined) return { message: tasksMessage(MAX_TASKS, this.#overTasks === true ? undefined : this.#overTasks), maxTasks: MAX_TASKS };
    return undefined;
  }

  /** Takes a last look at the disk use and the kernel's limit events, at the end of a run: true when a limit was crossed (and the tree is being killed). */
  checkLimits(): boolean {
    if (this.#disk?.sample() === true) return true;
    if (!this.#overKernel()) return false;
    this.#killOnce();
    return true;
  }

  /** The kernel's events are seen by the sampler and by every last look: the owner hears of them once. */
  #killOnce(): void {
    if (this.#killedForKernel) return;
    this.#killedForKernel = true;
    this.#kill();
  }

  #overMemory(): string | undefined {
    if (this.#limitMb === null) return undefined;
    if (this.#overBytes !== undefined) return memoryMessage(this.#limitMb, this.#overBytes);
    return this.#kernelOom || this.#cgroup?.oomKilled() ? memoryMessage(this.#limitMb) : undefined;
  }

  /** Stops the watchdog, kills what is left in the cgroups and removes them; call once the process tree is gone. */
  release(): void {
    this.#released = true;
    clearTimeout(this.#timer);
    this.#disk?.stop();
    this.#cgroup?.remove();
  }
}

/** The failure message of the task limit: the kernel's refusal of a fork, or the watchdog's count. */
export function tasksMessage(limit: number, counted?: number): string {
  if (counted === undefined) return `the carrier's process tree reached its limit of ${grouped(limit)} tasks (threads and processes), the kernel refused to start more (cgroup pids.max), and it was killed`;
  return `the carrier's process tree held ${grouped(counted)} tasks (threads and processes), over its limit of ${grouped(limit)}, and was killed`;
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
  if (used === undefined) return `the carrier's process tree reached its maxMemoryMb limit of ${grouped(limitMb)} MiB and the kernel killed it (cgroup memory limit)`;
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
