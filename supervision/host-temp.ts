// Where a host keeps its temp state (the carriers' private temp directories, the allowlist
// proxies' sockets, ptc mcp's upstream images): one directory per host process, made by mkdtemp
// directly in the temp directory, so its name cannot be predicted or planted and it is 0700 and
// ours from the start. No shared per-user root: a name that another user could create first
// would have to be checked, refused or replaced; a fresh mkdtemp name needs none of that. Its
// name carries the user and the process that made it (pid, start time, pid namespace, boot),
// which is the liveness marker, readable without a race: a later ptc of the same user removes
// the directories whose host is gone (killed with -9, machine rebooted). A program never sees
// what else is in it: bwrap and the permission model expose only its own private directory, and
// it cannot chmod what it cannot write, so a program that opens its own directory to everyone
// still lets no other user in.
// Shared by the host and the relay, which makes its carriers' directories on the far side.
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeTree, removeTreeSync } from './remove-tree.ts';

/** Who made a host directory: a process on one boot in one pid namespace. "0" where unknown. */
interface HostIdentity {
  uid: string;
  pid: number;
  start: string;
  pidNamespace: string;
  boot: string;
}

const NAME = /^ptc-(\d+|user)-(\d+)-(\d+)-(\d+)-([0-9a-f]+)-[^-]+$/;

let self: HostIdentity | undefined;
/** This process's host directory per temp base (real paths). */
const made = new Map<string, string>();

function removeOnExit(): void {
  for (const directory of made.values()) {
    try {
      removeTreeSync(directory);
    } catch {
      // What cannot be removed stays; a later ptc sweeps it once this process is gone.
    }
  }
}

/** This process's host directory under `base` (default os.tmpdir()), made on first use. */
export function hostTempDirectory(base: string = tmpdir()): string {
  const real = realpathSync(base);
  const existing = made.get(real);
  // A temp cleaner (systemd-tmpfiles) may have aged it out under a long-lived host: make another.
  if (existing !== undefined && isOurs(lstatQuiet(existing))) return existing;
  const me = identity();
  const directory = mkdtempSync(join(real, `ptc-${me.uid}-${me.pid}-${me.start}-${me.pidNamespace}-${me.boot}-`));
  if (!isOurs(lstatQuiet(directory))) throw new Error(`ptc: the temp directory ${directory} is not a private directory of this user`);
  if (made.size === 0) process.once('exit', removeOnExit);
  made.set(real, directory);
  return directory;
}

/** A new private directory (mode 0700) inside this process's host directory under `base`: a
 * carrier's temp directory, an allowlist proxy's socket, a run's upstream MCP images. */
export function privateDirectory(kind: 'tmp' | 'net' | 'mcp', base?: string): string {
  return mkdtempSync(join(hostTempDirectory(base), `${kind}-`));
}

/** The temp directories whose contents a confined run must not read (every host directory, its
 * own included, is in them): /tmp and `base`, each as named and as its real path. */
export function sharedTempPaths(base: string = tmpdir()): string[] {
  const paths = new Set<string>();
  for (const path of ['/tmp', base]) {
    const real = readQuiet(() => realpathSync(path));
    if (real === undefined) continue; // nothing there to hide
    paths.add(path);
    paths.add(real);
  }
  return [...paths].filter((path) => path !== '/');
}

/** The host directories under `base` that this user's hosts left behind: their process is gone.
 * Never another user's, never a symlink, never a live host's, never one from another pid namespace. */
export function deadHostDirectories(base: string = tmpdir()): string[] {
  const me = identity();
  let real: string;
  let names: string[];
  try {
    real = realpathSync(base);
    names = readdirSync(real);
  } catch {
    return [];
  }
  const own = made.get(real);
  const dead: string[] = [];
  for (const name of names) {
    const found = parse(name);
    if (found === undefined || found.uid !== me.uid) continue;
    const path = join(real, name);
    if (path === own || !isOurs(lstatQuiet(path)) || alive(found, me)) continue;
    dead.push(path);
  }
  return dead;
}

/** Removes what deadHostDirectories finds; failures are left for the next sweep. */
export async function sweepHostDirectories(base?: string): Promise<void> {
  await Promise.all(deadHostDirectories(base).map((path) => removeTree(path).catch(() => {})));
}

/** The same, at once: for the relay, which lives only as long as its carrier. */
export function sweepHostDirectoriesSync(base?: string): void {
  for (const path of deadHostDirectories(base)) {
    try {
      removeTreeSync(path);
    } catch {
      // left for the next sweep
    }
  }
}

function parse(name: string): HostIdentity | undefined {
  const match = NAME.exec(name);
  if (match === null) return undefined;
  return { uid: match[1]!, pid: Number(match[2]), start: match[3]!, pidNamespace: match[4]!, boot: match[5]! };
}

function identity(): HostIdentity {
  self ??= {
    uid: String(process.getuid?.() ?? 'user'),
    pid: process.pid,
    start: startTime(process.pid) ?? '0',
    pidNamespace: readQuiet(() => /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1]) ?? '0',
    boot: readQuiet(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/[^0-9a-f]/g, '').slice(0, 8)) || '0',
  };
  return self;
}

/** True unless the host is known to be gone. A pid of another namespace means nothing here, so
 * such a directory is kept; a pid reused by another process is told apart by its start time. */
function alive(host: HostIdentity, me: HostIdentity): boolean {
  if (host.boot !== '0' && me.boot !== '0' && host.boot !== me.boot) return false;
  if (host.pidNamespace !== me.pidNamespace) return true;
  if (me.start !== '0') {
    const start = startTime(host.pid);
    return start === null || start === host.start;
  }
  try {
    process.kill(host.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Field 22 of the stat of the process's main thread: clock ticks from boot to the process's
 * start; undefined when there is no such process, null when /proc would not say. Read through
 * task/<pid>/, not /proc/<pid>/stat: qemu-user answers a process's reads of its own
 * /proc/self/stat and /proc/<pid>/stat itself, with a start time a tick off the kernel's, so a ptc
 * run under emulation marked its directory with a time no other host read back, and they swept it. */
function startTime(pid: number): string | undefined | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : null;
  }
  // The command name (field 2) is in parentheses and may itself contain ") ".
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

function isOurs(stats: Stats | undefined): boolean {
  const uid = process.getuid?.();
  return stats !== undefined && stats.isDirectory() && (uid === undefined || stats.uid === uid) && (process.platform === 'win32' || (stats.mode & 0o077) === 0);
}

function lstatQuiet(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function readQuiet<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
