// Killing a carrier's whole tree. Shared by the host (local carriers) and the relay (carriers on
// the far side of SSH), so it sits with the wire code that both sides already share.
//
// POSIX: the carrier starts in a session and process group of its own (detached), and one
// SIGKILL to the group plus a walk of /proc's child lists reaches everything it started.
// Windows has no process groups or signals to send them. There the carrier is not detached, so
// libuv puts it in the kill-on-close job object it keeps for non-detached children: the tree dies
// with the host however the host ends. An explicit kill runs `taskkill /T /F`, which ends the
// carrier and every process below it, then terminates the carrier itself in case taskkill could
// not (it is missing, or the carrier had already gone).
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { win32 } from 'node:path';

/** How a carrier is spawned so its tree can be killed as one: `detached` on POSIX only. */
export function treeSpawnOptions(platform: NodeJS.Platform = process.platform): { detached: boolean } {
  return { detached: platform !== 'win32' };
}

/** What killing the tree of `pid` does on `platform`: signals to a group and pids, or a taskkill command. */
export type TreeKill =
  | { kind: 'signal'; targets: number[] }
  | { kind: 'taskkill'; executable: string; args: string[] };

/** The kill for `pid`'s tree on `platform`. taskkill is named by absolute path: PATH may be anything. */
export function treeKill(pid: number, platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env): TreeKill {
  if (platform === 'win32') {
    const systemRoot = env.SystemRoot ?? env.SYSTEMROOT ?? 'C:\\Windows';
    return { kind: 'taskkill', executable: win32.join(systemRoot, 'System32', 'taskkill.exe'), args: ['/T', '/F', '/PID', String(pid)] };
  }
  return { kind: 'signal', targets: [-pid, ...descendantsOf(pid)] };
}

/**
 * Kills a carrier's tree: on POSIX a SIGKILL to its process group and to every process descended
 * from it, so a child that moved to a session of its own (setsid, detached) dies too while its
 * parent still links it to the carrier (a bubblewrap pid namespace catches even orphaned ones);
 * on Windows taskkill's tree kill. Gone is fine.
 */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  const kill = treeKill(pid);
  if (kill.kind === 'taskkill') return killTreeOnWindows(pid, kill);
  for (const target of kill.targets) {
    try {
      process.kill(target, 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}

/** killGroup for a child this process spawned. On Windows a pid is free for reuse once the child
 * has exited (libuv closes its handle), so a tree kill then could hit a stranger: it is skipped.
 * True when a kill was sent. */
export function killChildTree(child: { pid?: number | undefined; exitCode: number | null; signalCode: NodeJS.Signals | null }, platform: NodeJS.Platform = process.platform): boolean {
  if (child.pid === undefined || (platform === 'win32' && (child.exitCode !== null || child.signalCode !== null))) return false;
  killGroup(child.pid);
  return true;
}

function killTreeOnWindows(pid: number, kill: { executable: string; args: string[] }): void {
  const terminate = (): void => {
    try {
      process.kill(pid); // TerminateProcess on Windows, whatever the signal
    } catch {
      // already gone
    }
  };
  // taskkill walks the tree from the root, so the root must still be alive when it looks.
  const taskkill = spawn(kill.executable, kill.args, { stdio: 'ignore', windowsHide: true });
  taskkill.once('error', terminate);
  taskkill.once('exit', terminate);
  taskkill.unref();
}

/** Pids below `root` in the process tree, from each thread's /proc children list (Linux; empty elsewhere). */
function descendantsOf(root: number): number[] {
  return processTree(root).filter((pid) => pid !== root);
}

/**
 * `root`, when it is still there, and every process below it, from each thread's /proc children
 * list (Linux; empty elsewhere). The kill and the host's CPU and memory accounting both walk it.
 */
export function processTree(root: number): number[] {
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    let threads: string[];
    try {
      threads = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // exited, or no /proc
    }
    found.push(pid);
    for (const thread of threads) {
      let listed: string;
      try {
        listed = readProcFile(`/proc/${pid}/task/${thread}/children`);
      } catch {
        continue;
      }
      for (const child of listed.split(' ')) {
        const number = Number(child);
        if (child.trim() !== '' && Number.isSafeInteger(number)) queue.push(number);
      }
    }
  }
  return found;
}

const procBuffer = Buffer.allocUnsafe(16 * 1024);

/**
 * A small /proc file's text (latin1), as readFileSync(path, 'latin1') gives it, in a third of the
 * time: no fstat (a /proc file says size 0 anyway), no buffer per read. The tree walks read one
 * file per thread and per process several times a run, so this is most of what a walk costs. A
 * file longer than the shared buffer is read again by readFileSync. Throws as readFileSync does
 * (ENOENT, ESRCH) when the process is gone.
 */
export function readProcFile(path: string): string {
  const fd = openSync(path, 'r');
  try {
    let total = 0;
    for (;;) {
      const bytes = readSync(fd, procBuffer, total, procBuffer.length - total, null);
      if (bytes === 0) return procBuffer.toString('latin1', 0, total);
      total += bytes;
      if (total === procBuffer.length) return readFileSync(path, 'latin1');
    }
  } finally {
    closeSync(fd);
  }
}

/** Whether process `pid` has exited but is not reaped yet (a zombie: this host has not yet
 * handled its SIGCHLD). False where /proc cannot tell. */
export function exitedUnreaped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The state follows the command name, which is in parentheses and may contain any byte.
    return stat.charAt(stat.lastIndexOf(')') + 2) === 'Z';
  } catch {
    return false;
  }
}
