// A carrier as a local child: its own session and process group, the control channel on a pipe
// at fd 3, stdout and stderr on pipes of their own. Killing it kills the whole tree.
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { exitedUnreaped, killChildTree, treeSpawnOptions } from '../../../supervision/process-tree.ts';
import { pipeDrainer } from '../../../supervision/pipe-drain.ts';
import { treeStorageWrites } from '../../../supervision/disk-usage.ts';
import { filterStdio, sendFilter } from '../../../supervision/seccomp-fd.ts';
import type { LaunchCommand } from '../../sandbox/index.ts';
import { ResourceGuard, spawnCgroup } from '../../../supervision/resources/guard.ts';
import type { CarrierConnection, StdioStream } from './connection.ts';
import { INTERRUPT_ENV, INTERRUPT_FD } from '../../../wire/revision.ts';

/** The spawn's stdio: stdout, stderr, control, bwrap's filter when there is one, and the interrupt pipe. */
function carrierStdio(filter: Uint8Array | undefined): ('ignore' | 'pipe')[] {
  const stdio = filterStdio(['ignore', 'pipe', 'pipe', 'pipe'], filter) as ('ignore' | 'pipe')[];
  while (stdio.length < INTERRUPT_FD) stdio.push('ignore');
  stdio[INTERRUPT_FD] = 'pipe';
  return stdio;
}

/** Starts `command` in `cwd` as a carrier with fd 3 as its control channel. */
export function openLocalConnection(command: LaunchCommand, cwd: string): CarrierConnection {
  const child = spawn(command.executable, command.args, {
    cwd,
    env: { ...command.env, [INTERRUPT_ENV]: String(INTERRUPT_FD) },
    stdio: carrierStdio(command.seccompFilter),
    // POSIX: its own session and process group, so one signal reaches everything the program
    // starts. Windows: not detached, so it stays in libuv's kill-on-close job (process-tree.ts).
    ...treeSpawnOptions(),
    windowsHide: true,
  });
  sendFilter(child, command.seccompFilter);
  // Its cgroups now, while the pool boots it, not when a run takes it; removed with the carrier
  // when no run ever adopted them (the guard that adopts them removes them on release).
  const cgroup = spawnCgroup(child.pid);
  let adopted = false;
  child.once('close', () => {
    if (!adopted) cgroup?.remove();
  });
  const control = child.stdio[3] as Socket;
  const stdout = child.stdout as Socket;
  const stderr = child.stderr as Socket;
  const interrupts = (child.stdio as unknown as (Socket | null)[])[INTERRUPT_FD] ?? null;
  interrupts?.on('error', () => {});
  interrupts?.unref();
  const exitListeners: Array<(code: number | null, signal: NodeJS.Signals | null) => void> = [];
  const failureListeners: Array<(message: string) => void> = [];
  const settled = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', (error) => {
      if (child.pid === undefined) {
        const message = `could not start the carrier (${command.executable}): ${error.message}`;
        for (const listener of failureListeners) listener(message);
        resolve();
      }
    });
  });
  child.once('exit', (code, signal) => {
    for (const listener of exitListeners) listener(code, signal);
  });
  const drains = { stdout: pipeDrainer(stdout), stderr: pipeDrainer(stderr) };
  let storageBase: number | undefined;
  return {
    control,
    stdout,
    stderr,
    pid: child.pid,
    transportTail: '',
    lost: undefined,
    // A carrier the kernel killed while idle (an OOM kill in its cgroup) is a zombie until this
    // host handles its SIGCHLD: a run that starts then waits for its exit instead of sending into it.
    get ending() {
      return child.pid !== undefined && child.exitCode === null && child.signalCode === null && exitedUnreaped(child.pid);
    },
    onExit: (listener) => void exitListeners.push(listener),
    onStartFailure: (listener) => void failureListeners.push(listener),
    settled,
    limits: (limits, kill) => {
      adopted = true;
      return new ResourceGuard(child.pid, storageBase === undefined ? limits : { ...limits, storageBase }, kill, cgroup);
    },
    countIdle() {
      if (child.pid !== undefined) storageBase = treeStorageWrites(child.pid);
    },
    kill: () => killChildTree(child),
    interrupt(run) {
      // One byte, the run's count (low byte): the carrier ignores an interrupt for a run already gone.
      if (interrupts !== null && interrupts.writable) interrupts.write(Buffer.of(run & 0xff));
    },
    drainStdio(accept) {
      for (const stream of ['stdout', 'stderr'] as const) drains[stream]((chunk) => accept(chunk, stream));
    },
    abandonStdio() {
      stdout.destroy();
      stderr.destroy();
    },
    ref() {
      child.ref();
      for (const stream of [stdout, stderr, control]) stream.ref?.();
    },
    unref() {
      child.unref();
      for (const stream of [stdout, stderr, control]) stream.unref?.();
    },
  };
}

