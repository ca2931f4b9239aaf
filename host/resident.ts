// The resident pool's place and identity (docs/cli.md, "The resident pool"): a per-user daemon
// that `ptc run` connects to so that its carrier is already booted. A public entry of its own
// beside index.ts: the CLI's fast path reads it without loading the library.
//
// Who may talk to a pool: its socket lives in a directory only this user can open (checked on
// every path component, private-directory.ts), and both ends prove they hold the token in that
// directory (0600) before anything else crosses: HMAC over the other side's nonce, so the token
// itself never crosses the socket, and a listener planted at the socket's path is refused before
// it learns anything.
// Node offers no SO_PEERCRED; the directory and the token stand for the peer's uid.
//
// Which pool: the socket is named for the identity of the process that would run the program
// in-process: this executable (its path, device, inode, size, times), ptc's version and protocol
// revision, the uid and umask, every environment variable the host reads while running one, and
// what confines the process (namespaces, root, cgroup, resource limits, capabilities, seccomp). A pool started by another binary, an upgraded one or another environment has another name,
// and the handshake compares the whole identity, so a name that collides is refused too.
import { closeSync, constants, fstatSync, openSync, readFileSync, readlinkSync, readSync, statSync, writeSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { hex, hmacSha256 } from './resident-hash.ts';
import { cacheDirectory, isPrivateDirectory, makePrivateDirectory } from './sandbox/private-directory.ts';
import { PROTOCOL_REVISION } from '../wire/revision.ts';

export { RESIDENT_SELECTOR } from '../wire/revision.ts';

/** The environment variables whose values the host reads while it runs a program: a pool serves only clients whose values are the same. */
export const RESIDENT_ENVIRONMENT = [
  'PATH', 'TMPDIR', 'TMP', 'TEMP', 'HOME', 'XDG_CACHE_HOME', 'XDG_STATE_HOME', 'XDG_RUNTIME_DIR',
  'NODE_OPTIONS', 'NODE_COMPILE_CACHE', 'SystemRoot', 'SYSTEMROOT',
];

/** How long a pool with no connection waits before it exits, unless PTC_RESIDENT_IDLE_MS says otherwise. */
export const DEFAULT_IDLE_MS = 5 * 60_000;

/** A socket path longer than this does not fit in sockaddr_un (108 bytes with its terminator on Linux). */
const MAX_SOCKET_PATH = 107;

/** Where this user's pools keep their sockets: $XDG_RUNTIME_DIR/ptc, else the cache directory's `resident`. */
export function residentDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime !== undefined && isAbsolute(runtime) && isPrivateDirectory(runtime)) return join(runtime, 'ptc');
  return join(cacheDirectory(env), 'resident');
}

export interface ResidentPlace {
  /** The private directory. */
  directory: string;
  /** The socket of the pool with this identity. */
  socket: string;
  /** The identity text, compared whole in the handshake. */
  identity: string;
}

/**
 * The place of the pool that serves this process, or why there is none: the directory is not
 * private to this user (made when `create`), or the socket's path would be too long.
 */
export function residentPlace(version: string, create: boolean, env: NodeJS.ProcessEnv = process.env): ResidentPlace | { refused: string } {
  const directory = residentDirectory(env);
  const usable = create ? makePrivateDirectory(directory) : isPrivateDirectory(directory);
  if (!usable) return { refused: `${directory} is not a directory that only this user can open` };
  const identity = residentIdentity(version, env);
  const socket = join(directory, `${nameOf(identity)}.sock`);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) return { refused: `the socket path ${socket} is longer than a Unix socket's ${MAX_SOCKET_PATH} bytes` };
  return { directory, socket, identity };
}

/**
 * The socket's name for an identity: 96 bits of three FNV-1a hashes with different seeds. Not a
 * secret and not a check (the handshake compares the identity whole); SHA-256 of the ~3 KB
 * identity costs a cold `ptc run` several ms in V8's interpreter, this a tenth of one.
 */
function nameOf(identity: string): string {
  let name = '';
  for (const seed of [0x811c9dc5, 0x01000193, 0x9e3779b9]) {
    let hash = seed;
    for (let i = 0; i < identity.length; i++) hash = Math.imul(hash ^ identity.charCodeAt(i), 0x01000193) >>> 0;
    name += hash.toString(16).padStart(8, '0');
  }
  return name;
}

/** The identity of a process that would run a program in-process: see the head of this file. */
export function residentIdentity(version: string, env: NodeJS.ProcessEnv = process.env): string {
  const executable = statSync(process.execPath);
  const root = statSync('/');
  const umask = process.umask();
  return JSON.stringify({
    ptc: version,
    revision: PROTOCOL_REVISION,
    executable: [process.execPath, executable.dev, executable.ino, executable.size, executable.mtimeMs, executable.ctimeMs],
    uid: process.getuid?.() ?? null,
    umask,
    env: RESIDENT_ENVIRONMENT.map((name) => env[name] ?? null),
    // What confines the process itself: a client in another mount, network or user namespace, a
    // chroot, another cgroup (a service's memory limit), lower resource limits, fewer capabilities
    // or a seccomp filter would run a program differently in-process, and must not reach a pool
    // started outside them.
    root: [root.dev, root.ino],
    namespaces: NAMESPACES.map((name) => link(`/proc/self/ns/${name}`)),
    cgroup: text('/proc/self/cgroup'),
    limits: text('/proc/self/limits'),
    status: text('/proc/self/status')?.split('\n').filter((line) => STATUS_FIELDS.test(line)) ?? null,
  });
}

const NAMESPACES = ['cgroup', 'ipc', 'mnt', 'net', 'pid', 'time', 'user', 'uts'];
/** The lines of /proc/self/status that say what the process may do (not what it is doing). */
const STATUS_FIELDS = /^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):/;

function link(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

function text(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** The token of the pools in `directory`, read from its 0600 file; undefined when there is none, or it is not this user's alone. */
export function readToken(directory: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(join(directory, 'token'), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.uid !== process.getuid?.() || (stats.mode & 0o077) !== 0 || stats.size !== TOKEN_BYTES) return undefined;
    const token = Buffer.alloc(TOKEN_BYTES);
    return readSync(fd, token, 0, TOKEN_BYTES, 0) === TOKEN_BYTES ? token : undefined;
  } finally {
    closeSync(fd);
  }
}

const TOKEN_BYTES = 32;

/** The token of the pools in `directory`: the one there, else a new one written 0600 (a daemon's first start). */
export function ensureToken(directory: string): Buffer | undefined {
  const existing = readToken(directory);
  if (existing !== undefined) return existing;
  const token = randomBytes(TOKEN_BYTES);
  try {
    const fd = openSync(join(directory, 'token'), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, token);
    } finally {
      closeSync(fd);
    }
    return token;
  } catch {
    // Another daemon wrote it first: theirs is the token.
    return readToken(directory);
  }
}

/** A fresh nonce for one side of a handshake. */
export function nonce(): string {
  return hex(randomBytes(16));
}

/** `count` bytes from the kernel's generator (node:crypto is not loaded for this: resident-hash.ts says why). */
function randomBytes(count: number): Buffer {
  const bytes = Buffer.alloc(count);
  const fd = openSync('/dev/urandom', constants.O_RDONLY);
  try {
    if (readSync(fd, bytes, 0, count, null) !== count) throw new Error('ptc resident: a short read from /dev/urandom');
  } finally {
    closeSync(fd);
  }
  return bytes;
}

/** The proof that `side` holds the token, over the other side's nonce. */
export function proof(token: Buffer, side: 'daemon' | 'client', otherNonce: string): string {
  return hex(hmacSha256(token, Buffer.from(`${side}\0${otherNonce}`)));
}

/** Whether `given` is the expected proof, compared in constant time. */
export function proofMatches(expected: string, given: unknown): boolean {
  if (typeof given !== 'string' || given.length !== expected.length) return false;
  // Every character is compared whatever the first difference: the time says nothing of where it is.
  let difference = 0;
  for (let i = 0; i < expected.length; i++) difference |= expected.charCodeAt(i) ^ given.charCodeAt(i);
  return difference === 0;
}
