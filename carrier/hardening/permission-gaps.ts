// Closes the ways around Node's permission model that a program has on the Nodes a carrier runs on
// (26, 22 and 20), found by trying each API with --permission and only a temp directory writable
// (test/attack/node-permission.test.ts tries each one through ptc). The model checks the `fs`
// module; these write files without asking it:
//   node:sqlite                          opens, creates and attaches database files (a path, ATTACH,
//                                        VACUUM INTO, a file: URI, backup()), and reads /proc (22, 26)
//   v8.setFlagsFromString                V8 flags write files anywhere (--redirect-code-traces-to,
//                                        --trace-turbo), with text the program chooses
//   v8.setHeapSnapshotNearHeapLimit      a snapshot into the working directory (20, 22)
//   trace_events.createTracing           a trace log into the working directory (20)
//   process.report.directory / filename  report files anywhere (20)
//   FileHandle#utimes                    the times of any file opened for reading (20)
//   a Unix socket's listen()             the socket file, anywhere (20, 22; on 26 with --allow-net)
// Each is refused with ERR_ACCESS_DENIED and counted as a denial; a socket path is refused only
// where the model would refuse a file. Runs only under the model (process.permission exists).
// And what the model does not judge at all: a mode with set-ID bits, which bwrap's system-call
// filter refuses in the kernel, is refused in `fs` itself (set-id-guard.ts).
import { syncBuiltinESMExports } from 'node:module';
import { requireBuiltin as require } from './builtins.ts';
import { resolve } from 'node:path';
import { refuseBuiltin, refuseExport, type Refusal } from './builtin-guard.ts';
import { refuseSetIdModes } from './set-id-guard.ts';
import { apply, defineProperty, ErrorCtor, getOwnPropertyDescriptor, getPrototypeOf, rejected, then } from './intrinsics.ts';

const cwd = process.cwd;

/** What a refused use throws. */
const WHY = {
  sqlite: 'SQLite opens and writes database files without Node\'s permission checks, so it could write outside the writable roots',
  flags: 'V8 flags can make V8 write files anywhere (--redirect-code-traces-to, --trace-turbo)',
  diagnostics: 'it writes its file without Node\'s permission checks on some Node versions, outside the writable roots',
  utimes: 'it changes the times of a file opened only for reading (Node 20 does not check it)',
  socket: 'a Unix socket is a file, and this path is outside the writable roots',
};

/** Refuses every API listed above, calling `denied` at each refused use. Call once, before any program code. */
export function closePermissionGaps(denied: () => void): void {
  const permission = process.permission;
  if (permission === undefined) return;
  const has = permission.has;
  const mayWrite = (path: string): boolean => apply(has, permission, ['fs.write', path]) as boolean;
  const refusal = (reason: string): Refusal => (what) => {
    denied();
    const error = new ErrorCtor(`${what} is refused by ptc's node-permission sandbox: ${reason}`);
    defineProperty(error, 'code', { __proto__: null, value: 'ERR_ACCESS_DENIED', writable: true, configurable: true } as PropertyDescriptor);
    return error;
  };

  if (hasBuiltin('node:sqlite')) quietly(() => refuseBuiltin('node:sqlite', refusal(WHY.sqlite)));
  refuseExport('node:v8', 'setFlagsFromString', refusal(WHY.flags));
  refuseExport('node:v8', 'setHeapSnapshotNearHeapLimit', refusal(WHY.diagnostics));
  refuseExport('node:trace_events', 'createTracing', refusal(WHY.diagnostics));
  refuseReportPaths(refusal(WHY.diagnostics));
  refuseHandleUtimes(refusal(WHY.utimes));
  if (process.platform !== 'win32') confineSocketPaths(mayWrite, refusal(WHY.socket));
  refuseSetIdModes(denied);
}

function hasBuiltin(specifier: string): boolean {
  const { isBuiltin } = require('node:module') as typeof import('node:module');
  return isBuiltin(specifier);
}

/** Runs `load` without the ExperimentalWarning Node 22 prints when node:sqlite loads: it would land in the first program's stderr. */
function quietly(load: () => void): void {
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    load();
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** process.report keeps its getters; setting where a report goes is refused (reports then go to the working directory, which the model checks). */
function refuseReportPaths(refuse: Refusal): void {
  const report = process.report;
  for (const name of ['directory', 'filename']) {
    const descriptor = getOwnPropertyDescriptor(report, name);
    if (descriptor?.set === undefined) continue;
    const set = function (): never {
      throw refuse(`process.report.${name}`);
    };
    defineProperty(report, name, { __proto__: null, get: descriptor.get, set, enumerable: true, configurable: false } as PropertyDescriptor);
  }
}

/** FileHandle is not exported: its prototype is reached through the first handle fs/promises.open gives out, before the program gets it. */
function refuseHandleUtimes(refuse: Refusal): void {
  const promises = require('node:fs/promises') as Record<string, unknown>;
  const open = promises.open as (...args: unknown[]) => Promise<object>;
  let done = false;
  const patch = (handle: object): object => {
    if (!done) {
      done = true;
      const utimes = function (): Promise<never> {
        return rejected(refuse('FileHandle.utimes()'));
      };
      defineProperty(getPrototypeOf(handle) as object, 'utimes', { __proto__: null, value: utimes, writable: false, enumerable: false, configurable: false } as PropertyDescriptor);
    }
    return handle;
  };
  const guarded = function (this: unknown): Promise<object> {
    return then(apply(open, this, arguments) as Promise<object>, patch);
  };
  defineProperty(guarded, 'name', { __proto__: null, value: 'open' } as PropertyDescriptor);
  promises.open = guarded;
  syncBuiltinESMExports();
}

/**
 * A server binds a Unix socket in net's createServerHandle, reached through Server#_listen2
 * (which listen() calls) and the legacy export net._createServerHandle; both are wrapped, with
 * Node's own test for "this is a socket path" (port and address type -1, no descriptor). An
 * abstract socket (a leading NUL) makes no file.
 */
function confineSocketPaths(mayWrite: (path: string) => boolean, refuse: Refusal): void {
  const net = require('node:net') as Record<string, unknown> & { Server: { prototype: Record<string, unknown> } };
  const check = (what: string, address: unknown, port: unknown, addressType: unknown, fd: unknown): void => {
    if ((typeof fd === 'number' && fd >= 0) || port !== -1 || addressType !== -1) return;
    if (typeof address === 'string' && (address[0] === '\0' || mayWrite(resolve(apply(cwd, process, []) as string, address)))) return;
    throw refuse(`${what}(${typeof address === 'string' ? JSON.stringify(address) : typeof address})`);
  };
  const listen2 = net.Server.prototype._listen2 as (...args: unknown[]) => unknown;
  const guardedListen = function (this: unknown, address: unknown, port: unknown, addressType: unknown, backlog: unknown, fd: unknown): unknown {
    check('net.Server.listen', address, port, addressType, fd);
    return apply(listen2, this, arguments);
  };
  defineProperty(net.Server.prototype, '_listen2', { __proto__: null, value: guardedListen, writable: true, enumerable: false, configurable: true } as PropertyDescriptor);
  const createHandle = net._createServerHandle as ((...args: unknown[]) => unknown) | undefined;
  if (createHandle !== undefined) {
    net._createServerHandle = function (this: unknown, address: unknown, port: unknown, addressType: unknown, fd: unknown): unknown {
      check('net._createServerHandle', address, port, addressType, fd);
      return apply(createHandle, this, arguments);
    };
    syncBuiltinESMExports();
  }
}
