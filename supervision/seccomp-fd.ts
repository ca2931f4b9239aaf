// Handing the seccomp filter (seccomp.ts) to bubblewrap on SECCOMP_FD: a pipe in the spawn's stdio,
// written once and closed, so bwrap reads the whole filter, then end of file, and closes the fd
// before the program starts. A pipe rather than a file: nothing on disk for a program to reach and
// nothing to remove afterwards. The filter is under 5 KB (547 instructions), far below a pipe's 64 KiB buffer.
import type { ChildProcess, IOType } from 'node:child_process';
import type { Socket } from 'node:net';
import { SECCOMP_FD } from './seccomp.ts';

/** `stdio` for a spawn, with a pipe on SECCOMP_FD when a filter goes to bwrap. */
export function filterStdio(stdio: IOType[], filter: Uint8Array | undefined): IOType[] {
  if (filter === undefined) return stdio;
  const padded = [...stdio];
  while (padded.length < SECCOMP_FD) padded.push('ignore');
  padded[SECCOMP_FD] = 'pipe';
  return padded;
}

/**
 * Writes `filter` to the child's SECCOMP_FD and closes this end; a bwrap that exits first says why
 * itself. bwrap waits for the end of file before it starts the program, so the close must not wait
 * for a later turn of the event loop: a host that goes on loading modules synchronously after the
 * spawn (the CLI, host/prestart.ts) would hold the carrier's boot back by that long
 * (measured: 50 ms of a `ptc run`). The write goes out at once when the pipe takes all of it, as a
 * pipe with room does; only a write that had to be queued closes after it drains.
 */
export function sendFilter(child: ChildProcess, filter: Uint8Array | undefined): void {
  const pipe = child.stdio[SECCOMP_FD] as Socket | null | undefined;
  if (filter === undefined || pipe === null || pipe === undefined) return;
  pipe.on('error', () => {});
  pipe.write(filter);
  if (pipe.writableLength === 0) pipe.destroy();
  else pipe.end(() => pipe.destroy());
}
