// Only the descriptors ptc hands a process may stay open in it. A descriptor the host inherited
// from whoever started it (a shell's `exec 200<>file`, systemd socket activation, a harness that
// leaks fds) would otherwise pass through spawn and bwrap into the carrier, where a program could
// write through it to a file outside every root. Node and libuv open their own descriptors with
// O_CLOEXEC, so a descriptor that is open without it at start-up survived an exec: inherited.
import { closeSync, readdirSync, readFileSync } from 'node:fs';

const FDINFO = '/proc/self/fdinfo';
/** O_CLOEXEC in the octal `flags:` line of /proc/<pid>/fdinfo/<fd> (the same value on every Linux architecture ptc ships for). */
const O_CLOEXEC = 0o2000000;

/**
 * Closes every descriptor but `kept` that this process inherited across exec. Call it first, before
 * anything of a program's exists. Linux only (elsewhere there is no fdinfo to tell ours from
 * inherited ones); throws when /proc cannot be read, since it then cannot know.
 */
export function closeInheritedDescriptors(kept: readonly number[]): number[] {
  if (process.platform !== 'linux') return [];
  const closed: number[] = [];
  // Listed first, closed after: the listing's own directory descriptor is in the list.
  for (const name of readdirSync(FDINFO)) {
    const fd = Number(name);
    if (!Number.isSafeInteger(fd) || kept.includes(fd)) continue;
    let flags: number;
    try {
      const match = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`${FDINFO}/${name}`, 'utf8'));
      if (match === null) continue;
      flags = Number.parseInt(match[1]!, 8);
    } catch {
      continue; // the listing's descriptor, already closed
    }
    if ((flags & O_CLOEXEC) !== 0) continue;
    closeSync(fd);
    closed.push(fd);
  }
  return closed;
}
