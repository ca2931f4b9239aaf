// Under node-permission no system-call filter stands between a program and chmod(2): a root host's
// program could leave a set-user-ID or set-group-ID file in its writable roots, which gives root to
// whoever runs it later (issue 32, "host harm as root"). There the program's only way to a call
// that sets a mode is Node's `fs` (no child processes, addons, FFI or workers), so the carrier
// refuses at that boundary what the bwrap filter refuses in the kernel (docs/syscall-filter.md):
//   a mode with S_ISUID or S_ISGID        chmod, fchmod, lchmod, FileHandle#chmod, open with a mode,
//                                         writeFile / appendFile / mkdir / read and write streams with one
//   a copy whose source carries either    copyFile and cp (they give the copy the source's mode),
//                                         e.g. of /usr/bin/passwd
// in every form (callback, Sync, fs/promises). The exports objects are changed once, before any
// program exists, which covers import, require, getBuiltinModule and module hooks (see
// builtin-guard.ts).
// The model itself refuses link, symlink and rename from outside the writable roots, so no
// set-ID file can be brought in under another name. File capabilities need setxattr, which `fs`
// does not have.
import { syncBuiltinESMExports } from 'node:module';
import { requireBuiltin as require } from './builtins.ts';
import { apply, construct, defineProperty, hasOwn, setPrototypeOf, ErrorCtor, getOwnPropertyDescriptor, getPrototypeOf, create, ownKeys, nextTick, rejected, regexpExec, then } from './intrinsics.ts';

// Taken now, not through live import bindings: a program may change the exports and re-sync them.
const { resolve } = require('node:path') as typeof import('node:path');
const { fileURLToPath } = require('node:url') as typeof import('node:url');
const parseInteger = Number.parseInt;
const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
/** Beyond any mode: a Stats whose mode is not Node's own data property (see sourceBits). */
const UNREADABLE = 0x40000000;
const OCTAL = /^[0-7]+$/;
const cwd = process.cwd;
const isBuffer = Buffer.isBuffer;
const bufferConcat = Buffer.concat;
const bufferFrom = Buffer.from;
const SLASH = bufferFrom('/');

type Fn = (...args: unknown[]) => unknown;
/**
 * A call's own `arguments` (unmapped: modules are strict): checks read and replace its entries in
 * place, and the original is applied to it, with no array built per call.
 */
type Args = { length: number; [index: number]: unknown };
type Exports = Record<string, unknown>;

/** Makes every `fs` API that sets a mode refuse set-ID bits, calling `denied` at each refusal. Call once, before any program code. */
export function refuseSetIdModes(denied: () => void): void {
  const fs = require('node:fs') as Exports;
  const promises = require('node:fs/promises') as Exports;
  // The carrier's own references: a program may replace the exports later.
  const statSync = fs.statSync as (path: unknown, options: object) => object | undefined;
  const lstatSync = fs.lstatSync as (path: unknown) => object;
  const readdirSync = fs.readdirSync as (path: Buffer, options: object) => Buffer[];

  const refusal = (syscall: string, mode: number, target: unknown): Error => {
    denied();
    const bits = (mode & S_ISUID ? 'set-user-ID' : '') + (mode & S_ISUID && mode & S_ISGID ? ' and ' : '') + (mode & S_ISGID ? 'set-group-ID' : '');
    const where = typeof target === 'number' ? `fd ${target}` : `'${describePath(target)}'`;
    const what = (mode & UNREADABLE) !== 0 ? 'the source\'s mode could not be read (fs.Stats was changed)' : `mode 0o${(mode & 0o7777).toString(8)} has the ${bits} bit`;
    const error = new ErrorCtor(`EPERM: operation not permitted, ${syscall} ${where}: ${what}, which ptc's node-permission sandbox refuses (a file a program leaves must not carry privilege)`);
    const own = (key: string, value: unknown): void => {
      defineProperty(error, key, { __proto__: null, value, writable: true, configurable: true, enumerable: true } as PropertyDescriptor);
    };
    own('errno', -1);
    own('code', 'EPERM');
    own('syscall', syscall);
    if (typeof target === 'number') own('fd', target);
    else own('path', describePath(target));
    return error;
  };

  /**
   * The set-ID bits `source` (a copy's source) carries, and for cp (`tree`) those of every entry
   * below a directory, whether or not the call asks to recurse (an option's getter could say no
   * to this check and yes to Node; without it Node refuses a directory anyway); 0 when it cannot
   * be read (the copy then fails by itself). Modes are read only as the own data property Node
   * puts on each Stats: a program may have put a getter for `mode`, or its own isDirectory(), on
   * Stats.prototype, and then no mode is read and the copy is refused (UNREADABLE).
   */
  const sourceBits = (source: unknown, tree: boolean): { bits: number; path: unknown } => {
    let mode;
    try {
      mode = ownMode(statSync(source, { throwIfNoEntry: false }));
    } catch {
      return { bits: 0, path: source };
    }
    if (mode === undefined) return { bits: 0, path: source };
    if ((mode & (S_ISUID | S_ISGID)) !== 0 || !tree || (mode & S_IFMT) !== S_IFDIR) return { bits: (mode & (S_ISUID | S_ISGID | UNREADABLE)) !== 0 ? mode : 0, path: source };
    return walk(pathBytes(source));
  };
  // cp copies a tree: every entry's mode goes to its copy. Symbolic links are judged by their
  // target and not followed further (a program cannot make one: the model refuses symlink).
  // Paths as bytes, as the kernel has them: a name need not be UTF-8.
  const walk = (directory: Buffer): { bits: number; path: unknown } => {
    let names: Buffer[];
    try {
      names = readdirSync(directory, { encoding: 'buffer' });
    } catch {
      return { bits: 0, path: directory };
    }
    for (let index = 0; index < names.length; index++) {
      const path = bufferConcat([directory, SLASH, names[index]!]);
      let mode;
      let link = false;
      try {
        mode = ownMode(lstatSync(path));
        link = mode !== undefined && (mode & S_IFMT) === S_IFLNK;
        if (link) mode = ownMode(statSync(path, { throwIfNoEntry: false })) ?? 0;
      } catch {
        continue;
      }
      if (mode === undefined) continue;
      if ((mode & (S_ISUID | S_ISGID | UNREADABLE)) !== 0) return { bits: mode, path };
      if (!link && (mode & S_IFMT) === S_IFDIR) {
        const below = walk(path);
        if (below.bits !== 0) return below;
      }
    }
    return { bits: 0, path: directory };
  };

  // How each API is judged: `check` gets the arguments (which it may replace with the values it
  // judged, so a getter cannot answer differently later) and returns a refusal or undefined.
  type Check = (args: Args) => Error | undefined;
  const modeAt = (syscall: string, index: number): Check => (args) => {
    const mode = args[index];
    const bits = setIdBits(mode);
    return bits === 0 ? undefined : refusal(syscall, modeValue(mode), args[0]);
  };
  const optionModeAt = (syscall: string, index: number, bareMode: boolean): Check => (args) => {
    const options = args[index];
    if (bareMode && (typeof options === 'number' || typeof options === 'string')) return modeAt(syscall, index)(args);
    if (typeof options !== 'object' || options === null) return undefined;
    const { copy, mode } = pinMode(options);
    args[index] = copy;
    return setIdBits(mode) === 0 ? undefined : refusal(syscall, modeValue(mode), args[0]);
  };
  const copySource = (syscall: string, tree: boolean): Check => (args) => {
    // Fewer than two arguments: Node refuses the call by itself.
    if (args.length < 2) return undefined;
    args[0] = absolute(args[0]);
    args[1] = absolute(args[1]);
    const { bits, path } = sourceBits(args[0], tree);
    return bits === 0 ? undefined : refusal(syscall, bits, path);
  };

  const sync = (exports: Exports, name: string, check: Check): void => {
    wrap(exports, name, (original) => function (this: unknown): unknown {
      const args = arguments as Args;
      const refused = check(args);
      if (refused !== undefined) throw refused;
      return apply(original, this, args);
    });
  };
  // A callback form reports the refusal through its callback, as it would the kernel's EPERM.
  const callback = (exports: Exports, name: string, check: Check): void => {
    wrap(exports, name, (original) => function (this: unknown): unknown {
      const args = arguments as Args;
      const done = args[args.length - 1];
      const refused = check(args);
      if (refused === undefined) return apply(original, this, args);
      if (typeof done !== 'function') throw refused;
      apply(nextTick, process, [done, refused]);
      return undefined;
    });
  };
  const promised = (exports: Exports, name: string, check: Check, after?: (value: unknown) => unknown): void => {
    wrap(exports, name, (original) => function (this: unknown): unknown {
      const args = arguments as Args;
      let refused: Error | undefined;
      try {
        refused = check(args);
      } catch (error) {
        return rejected(error);
      }
      if (refused !== undefined) return rejected(refused);
      const result = apply(original, this, args) as Promise<unknown>;
      return after === undefined ? result : then(result, after);
    });
  };

  for (const [name, syscall] of [['chmod', 'chmod'], ['lchmod', 'lchmod'], ['fchmod', 'fchmod']] as const) {
    callback(fs, name, modeAt(syscall, 1));
    sync(fs, `${name}Sync`, modeAt(syscall, 1));
  }
  callback(fs, 'open', modeAt('open', 2));
  sync(fs, 'openSync', modeAt('open', 2));
  for (const name of ['writeFile', 'appendFile']) {
    callback(fs, name, optionModeAt('open', 2, false));
    sync(fs, `${name}Sync`, optionModeAt('open', 2, false));
    promised(promises, name, optionModeAt('open', 2, false));
  }
  callback(fs, 'mkdir', optionModeAt('mkdir', 1, true));
  sync(fs, 'mkdirSync', optionModeAt('mkdir', 1, true));
  for (const name of ['createReadStream', 'createWriteStream']) sync(fs, name, optionModeAt('open', 1, false));
  guardStreamClass(fs, 'ReadStream', optionModeAt('open', 1, false));
  guardStreamClass(fs, 'WriteStream', optionModeAt('open', 1, false));
  callback(fs, 'copyFile', copySource('copyfile', false));
  sync(fs, 'copyFileSync', copySource('copyfile', false));
  callback(fs, 'cp', copySource('cp', true));
  sync(fs, 'cpSync', copySource('cp', true));
  promised(promises, 'copyFile', copySource('copyfile', false));
  promised(promises, 'cp', copySource('cp', true));
  promised(promises, 'chmod', modeAt('chmod', 1));
  promised(promises, 'lchmod', modeAt('lchmod', 1));
  promised(promises, 'mkdir', optionModeAt('mkdir', 1, true));
  // FileHandle is not exported: its prototype is reached through the first handle open gives out,
  // before the program holds it (as permission-gaps.ts does for utimes).
  let handleGuarded = false;
  promised(promises, 'open', modeAt('open', 2), (handle) => {
    if (!handleGuarded && typeof handle === 'object' && handle !== null) {
      handleGuarded = true;
      const prototype = getPrototypeOf(handle) as Exports;
      const chmod = prototype.chmod as Fn;
      const guarded = function (this: { fd?: unknown }, mode: unknown): unknown {
        if (setIdBits(mode) !== 0) return rejected(refusal('fchmod', modeValue(mode), this.fd));
        return apply(chmod, this, [mode]);
      };
      defineProperty(guarded, 'name', { __proto__: null, value: 'chmod' } as PropertyDescriptor);
      defineProperty(prototype, 'chmod', { __proto__: null, value: guarded, writable: false, enumerable: false, configurable: false } as PropertyDescriptor);
    }
    return handle;
  });
  syncBuiltinESMExports();
}

/**
 * The stream classes open their files with an `open` of their own, not the export, and both take
 * `flags` and `mode` (a ReadStream with flags 'w' creates its file). Each class is replaced by a
 * function that checks the options and constructs the original (for subclasses too), sharing its
 * prototype so `instanceof` holds; the prototype's `constructor` points to the guard, so a
 * stream's `.constructor` does not lead back to the original. Assigned through fs's own setter,
 * which is also what FileWriteStream / FileReadStream and the create functions read.
 */
function guardStreamClass(fs: Exports, name: 'ReadStream' | 'WriteStream', check: (args: Args) => Error | undefined): void {
  const original = fs[name] as new (...args: unknown[]) => object;
  if (typeof original !== 'function') return;
  const guarded = function (this: unknown): object {
    const args = arguments as Args;
    const refused = check(args);
    if (refused !== undefined) throw refused;
    return construct(original, args, new.target === undefined || new.target === guarded ? original : new.target);
  };
  defineProperty(guarded, 'prototype', { __proto__: null, value: original.prototype, writable: false } as PropertyDescriptor);
  defineProperty(guarded, 'name', { __proto__: null, value: name } as PropertyDescriptor);
  setPrototypeOf(guarded, getPrototypeOf(original));
  defineProperty(original.prototype, 'constructor', { __proto__: null, value: guarded, writable: true, enumerable: false, configurable: true } as PropertyDescriptor);
  fs[name] = guarded;
}

/** Replaces function `name` of `exports` (when it exists on this Node) with `make(original)`, keeping its name. */
function wrap(exports: Exports, name: string, make: (original: Fn) => Fn): void {
  const original = exports[name];
  if (typeof original !== 'function') return;
  const wrapped = make(original as Fn);
  defineProperty(wrapped, 'name', { __proto__: null, value: name } as PropertyDescriptor);
  defineProperty(exports, name, { __proto__: null, value: wrapped, writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
}

/** `stat`'s mode as Node set it (an own number), undefined for no stat, UNREADABLE when a program's accessor stands in its place. */
function ownMode(stat: object | undefined): number | undefined {
  if (stat === undefined) return undefined;
  const descriptor = getOwnPropertyDescriptor(stat, 'mode');
  // hasOwn: a getter's descriptor has no `value`, and reading one would reach Object.prototype.
  const value = descriptor !== undefined && hasOwn(descriptor, 'value') ? descriptor.value : undefined;
  return typeof value === 'number' ? value : UNREADABLE;
}

/** The set-ID bits of `mode` as Node reads a mode (a number, or a string of octal digits); 0 for anything else, which Node refuses by itself. */
function setIdBits(mode: unknown): number {
  return modeValue(mode) & (S_ISUID | S_ISGID);
}

function modeValue(mode: unknown): number {
  if (typeof mode === 'number') return mode;
  if (typeof mode === 'string' && regexpExec(OCTAL, mode) !== null) return parseInteger(mode, 8);
  return 0;
}

/**
 * A copy of `options` whose `mode` is an own data property holding the one value read from it:
 * the check and Node then see the same mode, whatever getter or prototype the program gave it.
 * Own properties are read once each, as Node's own option copies do; the prototype stays.
 */
function pinMode(options: object): { copy: object; mode: unknown } {
  const mode = (options as { mode?: unknown }).mode;
  const copy = create(getPrototypeOf(options)) as Record<PropertyKey, unknown>;
  const keys = ownKeys(options);
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    if (key === 'mode') continue;
    const descriptor = getOwnPropertyDescriptor(options, key);
    if (descriptor === undefined) continue;
    defineProperty(copy, key, { __proto__: null, value: (options as Record<PropertyKey, unknown>)[key], writable: true, enumerable: descriptor.enumerable === true, configurable: true } as PropertyDescriptor);
  }
  defineProperty(copy, 'mode', { __proto__: null, value: mode, writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
  return { copy, mode };
}

/**
 * `path` as Node would take it, read once and made absolute now: a file: URL (or an object Node
 * takes for one, whose getters could answer differently later) becomes its path, and a relative
 * path is resolved here, since a copy in the thread pool would resolve it against whatever
 * directory a later process.chdir() chose.
 */
function absolute(path: unknown): unknown {
  const here = apply(cwd, process, []) as string;
  if (typeof path === 'string') return resolve(here, path);
  if (isBuffer(path)) return path[0] === 0x2f ? path : bufferConcat([bufferFrom(`${here}/`), path]);
  if (typeof path === 'object' && path !== null) {
    try {
      return fileURLToPath(path as URL);
    } catch {
      // Not a file: URL: Node refuses it by itself.
    }
  }
  return path;
}

/** `path` (after absolute(): a string or a Buffer) as bytes. */
function pathBytes(path: unknown): Buffer {
  if (isBuffer(path)) return path;
  return bufferFrom(describePath(path));
}

function describePath(path: unknown): string {
  if (typeof path === 'string') return path;
  if (isBuffer(path)) return path.toString();
  return String(path);
}
