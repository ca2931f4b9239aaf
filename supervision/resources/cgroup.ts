// A cgroup v2 of the carrier's own, where the host can make one: the kernel then bounds the
// resident memory of the whole tree (native allocations and child processes included) with no
// sampling gap. How ptc finds where to make it:
//   1. its own cgroup, from the "0::<path>" line of /proc/self/cgroup;
//   2. the cgroup2 mount that holds it, from /proc/self/mountinfo;
//   3. that directory must offer "memory" in cgroup.controllers, and either already delegate it
//      to children (cgroup.subtree_control) or be the hierarchy's root, where ptc enables it;
//      a non-root cgroup that holds processes cannot delegate memory (cgroup v2's "no internal
//      processes" rule), so ptc never moves itself to make room.
// Anything else (cgroup v1, a hybrid whose cgroup2 has no memory controller, no permission)
// leaves the /proc watchdog to do the job.
import { accessSync, constants, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { treeOf } from './proc.ts';

/** What detection reads; the real one reads the file system, tests pass tables. */
export interface CgroupFiles {
  read(path: string): string | undefined;
  writable(path: string): boolean;
}

export type CgroupBase = { directory: string; enableMemory: boolean } | { unavailable: string };

/** Where ptc can create carrier cgroups with a memory limit, or why it cannot. */
export function findCgroupBase(files: CgroupFiles): CgroupBase {
  const membership = files.read('/proc/self/cgroup');
  const own = membership?.split('\n').find((line) => line.startsWith('0::'))?.slice(3);
  if (own === undefined) return { unavailable: 'this process is in no cgroup v2 hierarchy (no "0::" line in /proc/self/cgroup)' };
  const mount = cgroup2Mount(files.read('/proc/self/mountinfo') ?? '');
  if (mount === undefined) return { unavailable: 'no cgroup2 file system is mounted (/proc/self/mountinfo)' };
  const relative = mount.root === '/' ? own : own === mount.root ? '/' : own.startsWith(`${mount.root}/`) ? own.slice(mount.root.length) : undefined;
  if (relative === undefined) return { unavailable: `this process's cgroup ${own} is outside the cgroup2 mount at ${mount.point} (root ${mount.root})` };
  const directory = relative === '/' ? mount.point : join(mount.point, relative);
  const controllers = words(files.read(join(directory, 'cgroup.controllers')));
  if (!controllers.includes('memory')) {
    return { unavailable: `the memory controller is not available to ${directory} (cgroup.controllers: ${JSON.stringify(controllers.join(' '))})` };
  }
  if (!files.writable(directory) || !files.writable(join(directory, 'cgroup.subtree_control'))) {
    return { unavailable: `${directory} is not writable by this process` };
  }
  const delegated = words(files.read(join(directory, 'cgroup.subtree_control'))).includes('memory');
  if (!delegated && relative !== '/') {
    return { unavailable: `${directory} does not delegate memory to child cgroups (cgroup.subtree_control), and a cgroup that holds processes cannot` };
  }
  return { directory, enableMemory: !delegated };
}

/** The mount point and root of the first cgroup2 mount in mountinfo (proc(5)). */
export function cgroup2Mount(mountinfo: string): { point: string; root: string } | undefined {
  for (const line of mountinfo.split('\n')) {
    const [mounted, filesystem] = line.split(' - ');
    if (filesystem?.split(' ')[0] !== 'cgroup2') continue;
    const fields = mounted!.split(' ');
    // Fields 4 and 5: the root within the file system and the mount point, octal-escaped.
    if (fields[3] !== undefined && fields[4] !== undefined) return { root: unescapeMount(fields[3]), point: unescapeMount(fields[4]) };
  }
  return undefined;
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

/** The base for this process, found once (and memory enabled there once). */
function cgroupBase(): CgroupBase {
  if (base !== undefined) return base;
  base = findCgroupBase(systemFiles);
  if ('directory' in base && base.enableMemory) {
    try {
      writeFileSync(join(base.directory, 'cgroup.subtree_control'), '+memory');
    } catch (error) {
      base = { unavailable: `could not enable the memory controller in ${base.directory}: ${(error as Error).message}` };
    }
  }
  return base;
}

/** One carrier's cgroup: its memory limit, whether the kernel killed for it, and its removal. */
export interface CarrierCgroup {
  readonly directory: string;
  /** True once the kernel's OOM killer acted inside this cgroup. */
  oomKilled(): boolean;
  /** Removes the (empty) cgroup; call once the tree is gone. */
  remove(): void;
}

/**
 * Creates a cgroup limited to `limitBytes` and moves `root` and its descendants into it; the
 * carrier is idle when this runs (no program yet), so nothing forks during the move. Returns why
 * not when it cannot, and leaves nothing behind then.
 */
export function confineMemory(root: number, limitBytes: number): CarrierCgroup | { unavailable: string } {
  const found = cgroupBase();
  if (!('directory' in found)) return found;
  const directory = join(found.directory, `ptc-${process.pid}-${++created}`);
  try {
    mkdirSync(directory);
  } catch (error) {
    return { unavailable: `could not create a cgroup in ${found.directory}: ${(error as Error).message}` };
  }
  try {
    writeFileSync(join(directory, 'memory.max'), String(limitBytes));
    // Swap would let the tree exceed the limit in RAM terms; the whole tree goes at once.
    optionalWrite(join(directory, 'memory.swap.max'), '0');
    optionalWrite(join(directory, 'memory.oom.group'), '1');
    for (const pid of treeOf(root)) writeFileSync(join(directory, 'cgroup.procs'), String(pid));
  } catch (error) {
    removeCgroup(directory);
    return { unavailable: `could not move the carrier into ${directory}: ${(error as Error).message}` };
  }
  return {
    directory,
    oomKilled: () => /^oom_kill [1-9]/m.test(systemFiles.read(join(directory, 'memory.events')) ?? ''),
    remove: () => removeCgroup(directory),
  };
}

function optionalWrite(path: string, value: string): void {
  try {
    writeFileSync(path, value);
  } catch {
    // Older kernels lack the file; the memory limit itself still holds.
  }
}

function removeCgroup(directory: string): void {
  try {
    // A cgroup whose processes just died can stay busy for a moment; the killed tree is gone by now.
    rmdirSync(directory);
  } catch {
    // Gone already, or a descendant outlived the kill: the kernel frees it once that exits.
  }
}
