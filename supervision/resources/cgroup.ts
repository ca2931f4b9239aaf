// Over 400 lines: finding, making, filling and sweeping a carrier's cgroups share one model of the v1 and v2 hierarchies.
// Cgroups of the carrier's own, where the host can make them: the kernel then bounds the memory
// of the whole tree (native allocations, child processes, and the kernel memory it makes the
// kernel allocate for it, such as pipe and socket buffers), caps its tasks, and counts the CPU
// time of every task that ever ran in it, exited and reparented ones included, with no sampling
// gap. Two kinds:
//   cgroup v2 with delegation: one directory, under this process's own cgroup (the "0::<path>"
//     line of /proc/self/cgroup, in the cgroup2 mount of /proc/self/mountinfo), which must offer
//     "memory" in cgroup.controllers and either already delegate it to children
//     (cgroup.subtree_control) or be the hierarchy's root, where ptc enables it: a non-root
//     cgroup that holds processes cannot delegate (v2's "no internal processes" rule), so ptc
//     never moves itself to make room. pids comes along where it is offered the same way; CPU is
//     cpu.stat's usage_usec, which every v2 cgroup has.
//   cgroup v1 where this process may write (root, as on this machine and CI): a directory in each
//     of the memory, pids and cpuacct hierarchies, under this process's own cgroup there. v1 has
//     no internal-process rule, so nothing needs delegating. On kernels from 4.6 on (and this
//     one, 6.18), v1's memory.limit_in_bytes counts the kernel memory charged to the cgroup
//     (pipe buffers, unix socket buffers, slab) unless the kernel was booted with
//     cgroup.memory=nokmem.
// Anything else leaves the /proc watchdog (guard.ts) to do the job, and the report says so.
// Each directory is named after the host (pid, start time, pid namespace), so a later host sweeps
// what a killed one left (sweepStaleCgroups), as host-temp.ts does for temp directories.
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { treeOf } from './proc.ts';

/** What detection reads; the real one reads the file system, tests pass tables. */
export interface CgroupFiles {
  read(path: string): string | undefined;
  writable(path: string): boolean;
}

/** The v1 hierarchies ptc uses, by the controller that names them. */
export type V1Controller = 'memory' | 'pids' | 'cpuacct';
const V1_CONTROLLERS: readonly V1Controller[] = ['memory', 'pids', 'cpuacct'];

export type CgroupBase =
  | { version: 2; directory: string; enableMemory: boolean; /** pids: offered, and to enable here (true) or delegated already (false); absent: not offered */ enablePids?: boolean }
  | { version: 1; directories: Partial<Record<V1Controller, string>> }
  | { unavailable: string };

/** Where ptc can create carrier cgroups: v2 where it delegates memory, else v1 where this process may write, or why neither. */
export function findCgroups(files: CgroupFiles): CgroupBase {
  const v2 = findCgroupBase(files);
  if (!('unavailable' in v2)) return v2;
  const v1 = findCgroupV1(files);
  if (!('unavailable' in v1)) return v1;
  return { unavailable: `cgroup v2: ${v2.unavailable}; cgroup v1: ${v1.unavailable}` };
}

/** Where ptc can create carrier cgroups v2 with a memory limit, or why it cannot. */
export function findCgroupBase(files: CgroupFiles): Extract<CgroupBase, { version: 2 }> | { unavailable: string } {
  const membership = files.read('/proc/self/cgroup');
  const own = membership?.split('\n').find((line) => line.startsWith('0::'))?.slice(3);
  if (own === undefined) return { unavailable: 'this process is in no cgroup v2 hierarchy (no "0::" line in /proc/self/cgroup)' };
  const mount = cgroupMounts(files.read('/proc/self/mountinfo') ?? '').find((found) => found.type === 'cgroup2');
  if (mount === undefined) return { unavailable: 'no cgroup2 file system is mounted (/proc/self/mountinfo)' };
  const directory = directoryIn(mount, own);
  if (directory === undefined) return { unavailable: `this process's cgroup ${own} is outside the cgroup2 mount at ${mount.point} (root ${mount.root})` };
  const controllers = words(files.read(join(directory, 'cgroup.controllers')));
  if (!controllers.includes('memory')) {
    return { unavailable: `the memory controller is not available to ${directory} (cgroup.controllers: ${JSON.stringify(controllers.join(' '))})` };
  }
  if (!files.writable(directory) || !files.writable(join(directory, 'cgroup.subtree_control'))) {
    return { unavailable: `${directory} is not writable by this process` };
  }
  const delegated = words(files.read(join(directory, 'cgroup.subtree_control')));
  const root = directory === mount.point;
  if (!delegated.includes('memory') && !root) {
    return { unavailable: `${directory} does not delegate memory to child cgroups (cgroup.subtree_control), and a cgroup that holds processes cannot` };
  }
  const base: Extract<CgroupBase, { version: 2 }> = { version: 2, directory, enableMemory: !delegated.includes('memory') };
  if (delegated.includes('pids')) base.enablePids = false;
  else if (root && controllers.includes('pids')) base.enablePids = true;
  return base;
}

/** The v1 hierarchies (memory, pids, cpuacct) where this process may make a child of its own cgroup, or why none. */
export function findCgroupV1(files: CgroupFiles): Extract<CgroupBase, { version: 1 }> | { unavailable: string } {
  const membership = new Map<string, string>();
  for (const line of (files.read('/proc/self/cgroup') ?? '').split('\n')) {
    // hierarchy-ID:controller-list:cgroup-path (cgroups(7)); the path may itself hold ":".
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (match === null || match[1] === '0') continue;
    for (const controller of match[2]!.split(',')) membership.set(controller, match[3]!);
  }
  const mounts = cgroupMounts(files.read('/proc/self/mountinfo') ?? '').filter((mount) => mount.type === 'cgroup');
  const directories: Partial<Record<V1Controller, string>> = {};
  const reasons: string[] = [];
  for (const controller of V1_CONTROLLERS) {
    const own = membership.get(controller);
    const mount = mounts.find((found) => found.options.includes(controller));
    if (own === undefined || mount === undefined) {
      reasons.push(`no ${controller} hierarchy is mounted`);
      continue;
    }
    const directory = directoryIn(mount, own);
    if (directory === undefined) reasons.push(`this process's ${controller} cgroup ${own} is outside its mount at ${mount.point} (root ${mount.root})`);
    else if (!files.writable(directory)) reasons.push(`${directory} is not writable by this process`);
    else directories[controller] = directory;
  }
  if (Object.keys(directories).length === 0) return { unavailable: reasons.join('; ') };
  return { version: 1, directories };
}

interface CgroupMount {
  type: 'cgroup' | 'cgroup2';
  point: string;
  root: string;
  /** The super options: a v1 hierarchy's controllers are among them. */
  options: string[];
}

/** The cgroup and cgroup2 mounts of a mountinfo (proc(5)), in its order. */
function cgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [mounted, filesystem] = line.split(' - ');
    const [type, , options] = filesystem?.split(' ') ?? [];
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    const fields = mounted!.split(' ');
    // Fields 4 and 5: the root within the file system and the mount point, octal-escaped.
    if (fields[3] === undefined || fields[4] === undefined) continue;
    mounts.push({ type, root: unescapeMount(fields[3]), point: unescapeMount(fields[4]), options: (options ?? '').split(',') });
  }
  return mounts;
}

/** The mount point and root of the first cgroup2 mount in mountinfo (proc(5)). */
export function cgroup2Mount(mountinfo: string): { point: string; root: string } | undefined {
  const mount = cgroupMounts(mountinfo).find((found) => found.type === 'cgroup2');
  return mount === undefined ? undefined : { point: mount.point, root: mount.root };
}

/** Where the cgroup `own` (a path in the hierarchy) is under `mount`, or undefined when the mount does not show it. */
function directoryIn(mount: CgroupMount, own: string): string | undefined {
  const relative = mount.root === '/' ? own : own === mount.root ? '/' : own.startsWith(`${mount.root}/`) ? own.slice(mount.root.length) : undefined;
  if (relative === undefined) return undefined;
  return relative === '/' ? mount.point : join(mount.point, relative);
}

function unescapeMount(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

function words(text: string | undefined): string[] {
  return (text ?? '').split(/\s+/).filter((word) => word !== '');
}

const systemFiles: CgroupFiles = {
  read(path) {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  },
  writable(path) {
    try {
      accessSync(path, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  },
};

let base: CgroupBase | undefined;
let created = 0;

/** The base for this process, found once (controllers enabled there once, stale cgroups swept once). */
function cgroupBase(): CgroupBase {
  if (base !== undefined) return base;
  const found = findCgroups(systemFiles);
  base = found;
  if (!('unavailable' in found) && found.version === 2) {
    const enable = [...(found.enableMemory ? ['+memory'] : []), ...(found.enablePids === true ? ['+pids'] : [])];
    try {
      if (enable.length > 0) writeFileSync(join(found.directory, 'cgroup.subtree_control'), enable.join(' '));
    } catch (error) {
      base = { unavailable: `could not enable ${enable.join(' ')} in ${found.directory}: ${(error as Error).message}` };
    }
  }
  for (const directory of baseDirectories(base)) sweepStaleCgroups(directory);
  return base;
}

function baseDirectories(found: CgroupBase): string[] {
  if ('unavailable' in found) return [];
  return found.version === 2 ? [found.directory] : Object.values(found.directories);
}

/** Which limits the kernel keeps in the cgroups `found` makes: memory (when one is asked), tasks, CPU. */
export function cgroupKeeps(found: CgroupBase): { memory: boolean; tasks: boolean; cpu: boolean } {
  if ('unavailable' in found) return { memory: false, tasks: false, cpu: false };
  if (found.version === 2) return { memory: true, tasks: found.enablePids !== undefined, cpu: true };
  return { memory: found.directories.memory !== undefined, tasks: found.directories.pids !== undefined, cpu: found.directories.cpuacct !== undefined };
}

/** One carrier's cgroups: what the kernel keeps there, what it counted and refused, and their removal. */
export interface CarrierCgroup {
  /** The limits the kernel keeps for this carrier (memory only when a limit was asked for). */
  readonly keeps: { memory: boolean; tasks: boolean; cpu: boolean };
  /** CPU time of every task that ever ran in the cgroup, ms; undefined where the kernel does not count it here. */
  cpuMs(): number | undefined;
  /** True once the kernel's OOM killer acted inside the cgroup. */
  oomKilled(): boolean;
  /** True once the kernel refused a fork or clone for the task limit. */
  tasksRefused(): boolean;
  /** Kills every task in the cgroups (reparented ones included) and removes them, now or once the last task is gone. */
  remove(): void;
}

/**
 * Creates the carrier's cgroups, with `memoryBytes` (null: no memory limit) and `maxTasks`, and
 * moves `root` and its descendants in; the carrier is idle when this runs (no program yet), so
 * nothing forks during the move, and everything the program starts is born inside. Returns why
 * not when it cannot, and leaves nothing behind then.
 */
export function confineTree(root: number, memoryBytes: number | null, maxTasks: number): CarrierCgroup | { unavailable: string } {
  const found = cgroupBase();
  if ('unavailable' in found) return found;
  const name = `${hostName()}-${++created}`;
  const made: string[] = [];
  const fail = (what: string, error: unknown): { unavailable: string } => {
    for (const directory of made) killAndRemove(directory, 0);
    return { unavailable: `${what}: ${(error as Error).message}` };
  };
  const keeps = cgroupKeeps(found);
  if (memoryBytes === null) keeps.memory = false;
  if (found.version === 2) {
    const directory = join(found.directory, name);
    try {
      mkdirSync(directory);
      made.push(directory);
      if (memoryBytes !== null) {
        writeFileSync(join(directory, 'memory.max'), String(memoryBytes));
        // Swap would let the tree exceed the limit in RAM terms; the whole tree goes at once.
        optionalWrite(join(directory, 'memory.swap.max'), '0');
        optionalWrite(join(directory, 'memory.oom.group'), '1');
      }
      if (keeps.tasks) writeFileSync(join(directory, 'pids.max'), String(maxTasks));
      moveTree(root, [directory]);
    } catch (error) {
      return fail(`could not confine the carrier in ${directory}`, error);
    }
    const read = (file: string): string => systemFiles.read(join(directory, file)) ?? '';
    return remembered({
      keeps,
      cpuMs: () => {
        const usec = /^usage_usec (\d+)$/m.exec(read('cpu.stat'));
        return usec === null ? undefined : Number(usec[1]) / 1000;
      },
      oomKilled: () => keeps.memory && /^oom_kill [1-9]/m.test(read('memory.events')),
      tasksRefused: () => keeps.tasks && /^max [1-9]/m.test(read('pids.events')),
      remove: () => killAndRemove(directory, 0),
    });
  }
  const directories: Partial<Record<V1Controller, string>> = {};
  const used = V1_CONTROLLERS.filter((controller) => found.directories[controller] !== undefined && (controller !== 'memory' || keeps.memory));
  try {
    for (const controller of used) {
      const directory = join(found.directories[controller]!, name);
      mkdirSync(directory);
      made.push(directory);
      directories[controller] = directory;
      if (controller === 'memory') {
        writeFileSync(join(directory, 'memory.limit_in_bytes'), String(memoryBytes));
        // Memory plus swap at the same figure: no swapping past the limit (absent without swap accounting).
        optionalWrite(join(directory, 'memory.memsw.limit_in_bytes'), String(memoryBytes));
        // v1 leaves a moved task's pages charged where they were: bring the carrier's own along.
        optionalWrite(join(directory, 'memory.move_charge_at_immigrate'), '1');
      }
      if (controller === 'pids') writeFileSync(join(directory, 'pids.max'), String(maxTasks));
    }
    moveTree(root, made);
  } catch (error) {
    return fail(`could not confine the carrier in the cgroup v1 ${made.at(-1) ?? name}`, error);
  }
  const read = (controller: V1Controller, file: string): string => (directories[controller] === undefined ? '' : systemFiles.read(join(directories[controller], file)) ?? '');
  return remembered({
    keeps,
    cpuMs: () => {
      const text = read('cpuacct', 'cpuacct.usage').trim();
      return /^\d+$/.test(text) ? Number(text) / 1e6 : undefined;
    },
    // memory.oom_control counts the cgroup's OOM kills (oom_kill, kernel 4.13 on); v1 has no
    // group kill, so the guard kills the rest of the tree when it sees one.
    oomKilled: () => keeps.memory && /^oom_kill [1-9]/m.test(read('memory', 'memory.oom_control')),
    tasksRefused: () => keeps.tasks && /^max [1-9]/m.test(read('pids', 'pids.events')),
    remove: () => {
      for (const directory of made) killAndRemove(directory, 0);
    },
  });
}

/** The kernel's events outlive the cgroup: seen once, they stay seen, and they are read once more before it is removed (the run's failure may be built after). */
function remembered(cgroup: CarrierCgroup): CarrierCgroup {
  let oom = false;
  let refused = false;
  const oomKilled = (): boolean => (oom ||= cgroup.oomKilled());
  const tasksRefused = (): boolean => (refused ||= cgroup.tasksRefused());
  return {
    keeps: cgroup.keeps,
    cpuMs: cgroup.cpuMs,
    oomKilled,
    tasksRefused,
    remove() {
      oomKilled();
      tasksRefused();
      cgroup.remove();
    },
  };
}

/** Tries to move the tree this often: a process forked between a walk and its parent's move stays behind, so the tree is walked again until a walk finds nothing new. */
const MOVE_ROUNDS = 20;

/** Moves `root` and its descendants into each of `directories`, parents first (a child forked after its parent moved is born inside). */
function moveTree(root: number, directories: readonly string[]): void {
  const moved = new Set<number>();
  for (let round = 0; round < MOVE_ROUNDS; round++) {
    const fresh = treeOf(root).filter((pid) => !moved.has(pid));
    if (fresh.length === 0) return;
    for (const pid of fresh) {
      for (const directory of directories) {
        try {
          writeFileSync(join(directory, 'cgroup.procs'), String(pid));
        } catch (error) {
          // Exited since the walk: nothing to move. The root itself must move.
          if ((error as NodeJS.ErrnoException).code !== 'ESRCH' || pid === root) throw error;
        }
      }
      moved.add(pid);
    }
  }
  throw new Error(`the carrier's process tree was still growing after ${MOVE_ROUNDS} moves`);
}

function optionalWrite(path: string, value: string): void {
  try {
    writeFileSync(path, value);
  } catch {
    // Older kernels (or no swap accounting) lack the file; the memory limit itself still holds.
  }
}

/** Tries this often, this far apart, to remove a cgroup whose killed tasks are still exiting. */
const REMOVE_ATTEMPTS = 50;
const REMOVE_RETRY_MS = 100;
/** Cgroups this process still has to remove: tried once more, waiting, when it exits. */
const pending = new Set<string>();
/** Whether removePending() is registered for this process's exit: once, however often pending empties and fills again. */
let removesOnExit = false;

/**
 * Kills what is left in `directory` (a program's reparented or daemonized processes: the tree kill
 * walks parent links and misses them) and removes it; a cgroup whose tasks are still dying is busy
 * for a moment, so this tries again, off the caller's path, and once more as this process exits.
 * What still cannot go is swept by a later host once this one is gone.
 */
function killAndRemove(directory: string, attempt: number): void {
  killTasks(directory);
  try {
    rmdirSync(directory);
    pending.delete(directory);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EBUSY' || attempt >= REMOVE_ATTEMPTS) return void pending.delete(directory);
    if (!removesOnExit) process.once('exit', removePending);
    removesOnExit = true;
    pending.add(directory);
    setTimeout(() => killAndRemove(directory, attempt + 1), REMOVE_RETRY_MS).unref();
  }
}

function killTasks(directory: string): void {
  for (const line of (systemFiles.read(join(directory, 'cgroup.procs')) ?? '').split('\n')) {
    const pid = Number(line);
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // exited already
    }
  }
}

/** At exit, nothing asynchronous runs: waits up to a second in all for the killed tasks to be gone. */
function removePending(): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let round = 0; round < 100 && pending.size > 0; round++) {
    for (const directory of [...pending]) {
      killTasks(directory);
      try {
        rmdirSync(directory);
        pending.delete(directory);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EBUSY') pending.delete(directory);
      }
    }
    if (pending.size > 0) Atomics.wait(pause, 0, 0, 10);
  }
}

interface HostMark {
  pid: number;
  start: string;
  pidNamespace: string;
}

const NAME = /^ptc-(\d+)-(\d+)-(\d+)-\d+$/;
let me: HostMark | undefined;

/** ptc-<pid>-<start time>-<pid namespace>: which host made a cgroup, readable by a later one. */
function hostName(): string {
  me ??= { pid: process.pid, start: startTime(process.pid) ?? '0', pidNamespace: pidNamespace() };
  return `ptc-${me.pid}-${me.start}-${me.pidNamespace}`;
}

function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
}

/** The start time of process `pid`, read as host-temp.ts reads it: through task/<pid>/, which qemu-user does not answer itself. */
function startTime(pid: number): string | undefined {
  const stat = systemFiles.read(`/proc/${pid}/task/${pid}/stat`);
  // Field 22 (starttime), counted from the last ")" since the command name may hold one.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/**
 * Kills and removes the carrier cgroups under `directory` whose host is gone (killed with -9):
 * never another pid namespace's (its pids mean nothing here), never a live host's (a reused pid
 * is told apart by its start time).
 */
export function sweepStaleCgroups(directory: string): string[] {
  hostName();
  let entries: string[];
  try {
    entries = readdirSync(directory);
  } catch {
    return [];
  }
  const swept: string[] = [];
  for (const entry of entries) {
    const match = NAME.exec(entry);
    if (match === null || match[3] !== me!.pidNamespace || match[3] === '0') continue;
    if (startTime(Number(match[1])) === match[2]) continue;
    killAndRemove(join(directory, entry), 0);
    swept.push(join(directory, entry));
  }
  return swept;
}
