// Killing a carrier's whole tree. Shared by the host (local carriers) and the relay (carriers on
// the far side of SSH), so it sits with the wire code that both sides already share.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Sends SIGKILL to a carrier's process group and to every process descended from it, so a child
 * that moved to a session of its own (setsid, detached) dies too while its parent still links it
 * to the carrier. (A bubblewrap pid namespace catches even orphaned ones.) Gone is fine.
 */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  const targets = [-pid, ...descendantsOf(pid)];
  for (const target of targets) {
    try {
      process.kill(target, 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}

/** Pids below `root` in the process tree, from each thread's /proc children list (Linux; empty elsewhere). */
function descendantsOf(root: number): number[] {
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
    for (const thread of threads) {
      let listed: string;
      try {
        listed = readFileSync(`/proc/${pid}/task/${thread}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of listed.split(' ')) {
        if (child === '' || child === '\n') continue;
        found.push(Number(child));
        queue.push(Number(child));
      }
    }
  }
  return found;
}
