// A carrier as a local child: its own session and process group, the control channel on a pipe
// at fd 3, stdout and stderr on pipes of their own. Killing it kills the whole tree.
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { readSync } from 'node:fs';
import { killGroup } from '../../../carrier/protocol/process-tree.ts';
import type { LaunchCommand } from '../../sandbox/index.ts';
import type { CarrierConnection, StdioStream } from './connection.ts';

/** Starts `command` in `cwd` as a carrier with fd 3 as its control channel. */
export function openLocalConnection(command: LaunchCommand, cwd: string): CarrierConnection {
  const child = spawn(command.executable, command.args, {
    cwd,
    env: command.env,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    // Its own session and process group, so one signal reaches everything the program starts.
    detached: true,
    windowsHide: true,
  });
  const control = child.stdio[3] as Socket;
  const stdout = child.stdout as Socket;
  const stderr = child.stderr as Socket;
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
  const drains = { stdout: drainer(stdout), stderr: drainer(stderr) };
  return {
    control,
    stdout,
    stderr,
    pid: child.pid,
    transportTail: '',
    onExit: (listener) => void exitListeners.push(listener),
    onStartFailure: (listener) => void failureListeners.push(listener),
    settled,
    kill: () => killGroup(child.pid),
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

/** Reads whatever is waiting in a pipe right now, without blocking, and hands it to `accept`.
 * libuv keeps pipes non-blocking, so an empty pipe answers EAGAIN at once. */
function drainer(stream: Socket): (accept: (chunk: Buffer) => void) => void {
  const buffer = Buffer.allocUnsafe(64 * 1024);
  return (accept) => {
    const fd = (stream as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return;
    for (;;) {
      let bytes: number;
      try {
        bytes = readSync(fd, buffer, 0, buffer.length, null);
      } catch {
        return; // EAGAIN: nothing waiting (or the pipe is gone)
      }
      if (bytes === 0) return;
      accept(Buffer.from(buffer.subarray(0, bytes)));
    }
  };
}
