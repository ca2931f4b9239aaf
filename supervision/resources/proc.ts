// What a carrier's process tree is using, read from Linux's /proc by the host: the carrier cannot
// be trusted to report its own. One walk of the tree gives CPU time and resident memory.
import { readFileSync } from 'node:fs';
import { processTree, readProcFile } from '../process-tree.ts';

/**
 * /proc/<pid>/stat counts CPU time in clock ticks of USER_HZ, which the kernel fixes at 100 for
 * user space on every architecture Node ships for (sysconf(_SC_CLK_TCK)).
 */
const TICKS_PER_SECOND = 100;

export interface TreeUsage {
  /**
   * CPU time, user + system, of every live process in the tree plus what the kernel has already
   * folded into them from children they reaped (cutime + cstime), in ms. A reap inside the tree
   * moves a child's time into its parent's, so the sum is kept; only a process that leaves the
   * tree (reparented outside it) takes its time along.
   */
  cpuMs: number;
  /** Resident memory (VmRSS) summed over the tree, bytes; pages shared between processes count once per process. */
  rssBytes: number;
  /** Processes counted. */
  processes: number;
}

/** Whether this machine has the /proc this module reads. */
export function procAvailable(): boolean {
  try {
    return parseStat(readFileSync('/proc/self/stat', 'latin1')) !== undefined;
  } catch {
    return false;
  }
}

/** Reads the usage of `root` and everything below it; processes that exit mid-walk are skipped. */
export function treeUsage(root: number): TreeUsage {
  const usage: TreeUsage = { cpuMs: 0, rssBytes: 0, processes: 0 };
  for (const pid of treeOf(root)) {
    let stat: ReturnType<typeof parseStat>;
    let status: string;
    try {
      stat = parseStat(readProcFile(`/proc/${pid}/stat`));
      status = readProcFile(`/proc/${pid}/status`);
    } catch {
      continue; // exited between the walk and the read
    }
    if (stat === undefined) continue;
    usage.cpuMs += ((stat.utime + stat.stime + stat.cutime + stat.cstime) * 1000) / TICKS_PER_SECOND;
    usage.rssBytes += residentBytes(status);
    usage.processes += 1;
  }
  return usage;
}

/** Tasks (threads of every process) in `root` and its descendants, as the kernel's pids limit counts them; 0 once the tree is gone. */
export function treeTasks(root: number): number {
  let tasks = 0;
  for (const pid of treeOf(root)) {
    try {
      tasks += threadCount(readProcFile(`/proc/${pid}/status`));
    } catch {
      // exited between the walk and the read
    }
  }
  return tasks;
}

/** Threads: of /proc/<pid>/status; a process whose status has none (a zombie) holds one task still. */
export function threadCount(status: string): number {
  const match = /^Threads:\s+(\d+)$/m.exec(status);
  return match === null ? 1 : Number(match[1]);
}

/** `root` and its descendants (the walk the tree kill uses too). */
export const treeOf = processTree;

/**
 * The CPU fields of /proc/<pid>/stat (proc(5): utime, stime, cutime, cstime are fields 14-17).
 * The command name (field 2) is in parentheses and may itself hold spaces and parentheses, so
 * the fields are counted from the last ")".
 */
export function parseStat(text: string): { utime: number; stime: number; cutime: number; cstime: number } | undefined {
  const close = text.lastIndexOf(')');
  if (close === -1) return undefined;
  // After ")": field 3 (state) is index 0, so field n is index n - 3.
  const fields = text.slice(close + 2).split(' ');
  const [utime, stime, cutime, cstime] = [14, 15, 16, 17].map((field) => Number(fields[field - 3]));
  if (![utime, stime, cutime, cstime].every((value) => Number.isSafeInteger(value) && value! >= 0)) return undefined;
  return { utime: utime!, stime: stime!, cutime: cutime!, cstime: cstime! };
}

/** VmRSS of /proc/<pid>/status in bytes; a zombie or kernel thread has none. */
export function residentBytes(status: string): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  return match === null ? 0 : Number(match[1]) * 1024;
}
