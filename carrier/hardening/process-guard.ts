// Keeps the program's signals among its own processes. Under Node's permission model the carrier
// runs as the host's user in the host's pid namespace, so process.kill(process.ppid) would reach
// the host (and os.setPriority could renice it); bubblewrap's pid namespace already hides it, and
// under the `none` backend a child process can still signal anything (the README says so).
// Allowed targets: the carrier itself, its own process group, and processes descended from it.
import { syncBuiltinESMExports } from 'node:module';
import { requireBuiltin as require } from './builtins.ts';

const fs = require('node:fs') as typeof import('node:fs');
const os = require('node:os') as typeof import('node:os');

// Captured at load, before any program exists: a program that replaces Math.abs, Error,
// fs.readFileSync or a typed array's length must not be able to talk the guard into a signal.
const { apply } = Reflect;
const { abs } = Math;
const ErrorCtor = Error;
const TypeErrorCtor = TypeError;
const readFile = fs.readFileSync;
const lengthOf = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'length')!.get!;

/** Replaces process.kill, process._kill, process._debugProcess and os.setPriority with guarded versions. Call once, before any program code. */
export function guardProcesses(): void {
  const self = process.pid;
  const kill = process.kill;
  const internals = process as unknown as { _kill?: (pid: number, signal: number) => number; _debugProcess?: (pid: number) => void };
  const rawKill = internals._kill;
  const debugProcess = internals._debugProcess;
  const setPriority = os.setPriority;

  // Each guard hands the original the very number it checked: an object's valueOf could answer
  // differently the second time, and the raw bindings truncate (2^32 + pid, or pid + 0.5, is pid).
  const guardedKill = function (pid: unknown, signal?: string | number): true {
    return apply(kill, process, [allowedPid('kill', pid), signal]) as true;
  };
  Object.defineProperty(process, 'kill', { value: guardedKill, writable: true, configurable: true, enumerable: true });
  if (rawKill !== undefined) {
    // The binding behind process.kill, reachable as an undocumented property.
    const guardedRawKill = function (pid: unknown, signal: number): number {
      return apply(rawKill, process, [allowedPid('kill', pid), signal]) as number;
    };
    Object.defineProperty(process, '_kill', { value: guardedRawKill, writable: true, configurable: true, enumerable: false });
  }
  if (debugProcess !== undefined) {
    // Sends SIGUSR1, which opens a Node host's inspector: code execution over the (open) network.
    const guardedDebugProcess = function (pid: unknown): void {
      apply(debugProcess, process, [allowedPid('kill', pid)]);
    };
    Object.defineProperty(process, '_debugProcess', { value: guardedDebugProcess, writable: true, configurable: true, enumerable: false });
  }
  const guardedSetPriority = function (pid: unknown, priority?: unknown): void {
    // setPriority(priority) alone targets the calling process.
    if (priority === undefined) apply(setPriority, os, [pid]);
    else apply(setPriority, os, [allowedPid('uv_os_setpriority', pid), priority]);
  };
  Object.defineProperty(os, 'setPriority', { value: guardedSetPriority, writable: true, configurable: true, enumerable: true });
  syncBuiltinESMExports();

  /** The pid as a 32-bit integer when it names the carrier, its group or a descendant; otherwise a throw. */
  function allowedPid(syscall: string, target: unknown): number {
    const pid = typeof target === 'number' ? target : typeof target === 'string' && target !== '' ? +target : NaN;
    if (pid !== (pid | 0)) {
      const error = new TypeErrorCtor(`The "pid" argument must be a 32-bit integer, got ${typeof target === 'string' ? `'${target}'` : typeof target === 'number' ? target : typeof target}`) as NodeJS.ErrnoException;
      error.code = 'ERR_INVALID_ARG_TYPE';
      throw error;
    }
    if (pid === 0 || pid === self || pid === -self || isOwn(abs(pid), self)) return pid;
    const error = new ErrorCtor(`${syscall} EPERM: pid ${pid} is not a process this program started (ptc keeps signals inside the program's own processes)`) as NodeJS.ErrnoException;
    error.code = 'EPERM';
    error.errno = -1;
    error.syscall = syscall;
    throw error;
  }
}

/** Whether `pid` descends from `self` (its parent chain reaches it), read from /proc; false when /proc is not readable. */
function isOwn(pid: number, self: number): boolean {
  let current = pid;
  for (let hops = 0; hops < 64 && current > 1; hops++) {
    let stat: Uint8Array;
    try {
      stat = apply(readFile, fs, [`/proc/${current}/stat`]) as Uint8Array;
    } catch {
      return false;
    }
    const parent = parentOf(stat);
    if (parent === self) return true;
    current = parent;
  }
  return false;
}

/** The ppid field of /proc/<pid>/stat: "pid (comm) state ppid …", where comm may hold spaces and parentheses. */
function parentOf(stat: Uint8Array): number {
  const length = apply(lengthOf, stat, []) as number;
  let close = length - 1;
  while (close >= 0 && stat[close] !== 0x29) close--; // the last ')'
  let at = close + 4; // past ") S "
  let parent = 0;
  for (; at < length && stat[at]! >= 0x30 && stat[at]! <= 0x39; at++) parent = parent * 10 + (stat[at]! - 0x30);
  return parent;
}
