// The bubblewrap probe's answer, kept across processes: every `ptc run` would otherwise start a
// test sandbox before its carrier. Only a passing probe is kept, under a key that names what the
// answer depends on: the bwrap binary (path, device, inode, size, mtime), the kernel (release and
// boot id) and the sysctls that switch unprivileged user namespaces on and off, plus the user. When
// any of them changes the key no longer matches and the probe runs again. The cache is only ever
// a shortcut: a file that is missing, unreadable, corrupt, foreign or too large, or in a directory
// that is not private to this user, means "probe".
import { openSync, readFileSync, renameSync, unlinkSync, writeSync, closeSync, fstatSync, type Stats } from 'node:fs';
import { release } from 'node:os';
import { join } from 'node:path';
import { cacheDirectory, isPrivateDirectory, makePrivateDirectory } from './private-directory.ts';
import { randomBytes } from 'node:crypto';

const FILE_NAME = 'bwrap-probe.json';
/** One machine has a handful of bwraps at most; a bigger file is not ours. */
const MAX_FILE_BYTES = 64 * 1024;
const MAX_ENTRIES = 8;
/** 2: the probe also loads the seccomp filter and remounts /proc read-only; passes of 1 did not. */
const FORMAT = 2;

/** Read alongside the boot id: each can make bwrap fail without a reboot or a new binary. */
const USERNS_SYSCTLS = [
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
];

/** The per-user cache file, in the private cache directory (private-directory.ts). */
export function probeCacheFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDirectory(env), FILE_NAME);
}

/** What a probe of `bwrapPath` (whose stats are given), run through `unshare` or not, depends on, as a comparable string. */
export function probeKey(bwrapPath: string, stats: Stats, unshare: string | null = null): string {
  return JSON.stringify({
    bwrap: { path: bwrapPath, dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs },
    unshare,
    kernel: { release: release(), bootId: readSmall('/proc/sys/kernel/random/boot_id') },
    userns: USERNS_SYSCTLS.map(readSmall),
    uid: process.getuid?.() ?? null,
  });
}

/** True when `file` records a passing probe under exactly `key`. */
export function cachedPass(file: string, key: string): boolean {
  return readEntries(file).includes(key);
}

/** Records a passing probe under `key`, replacing older entries for the same bwrap. Atomic (a
 * reader sees the old file or the new one), mode 0600; a cache that cannot be written is skipped. */
export function recordPass(file: string, key: string): void {
  const path = bwrapPathOf(key);
  // An entry of another shape (a hand-edited file) is dropped with the stale ones.
  const kept = readEntries(file).filter((entry) => bwrapPathOf(entry) !== path && bwrapPathOf(entry) !== undefined);
  const text = `${JSON.stringify({ format: FORMAT, passes: [...kept, key].slice(-MAX_ENTRIES).map((entry) => JSON.parse(entry)) })}\n`;
  const dir = join(file, '..');
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    if (!makePrivateDirectory(dir)) return;
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch {
    // Read-only home, full disk, a directory in the way: the next process probes again, which is
    // what it would do without a cache.
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
  }
}

function bwrapPathOf(entry: string): string | undefined {
  const path = (JSON.parse(entry) as { bwrap?: { path?: unknown } }).bwrap?.path;
  return typeof path === 'string' ? path : undefined;
}

function readEntries(file: string): string[] {
  let text: string;
  try {
    if (!isPrivateDirectory(join(file, '..'))) return [];
    const fd = openSync(file, 'r');
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile() || stats.size > MAX_FILE_BYTES || !ownedByMe(stats)) return [];
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return [];
  }
  try {
    const parsed = JSON.parse(text) as { format?: unknown; passes?: unknown };
    if (parsed.format !== FORMAT || !Array.isArray(parsed.passes)) return [];
    // Re-serialized so the comparison with probeKey's output does not depend on the file's spacing.
    return parsed.passes.filter((entry) => typeof entry === 'object' && entry !== null).map((entry) => JSON.stringify(entry));
  } catch {
    return [];
  }
}

function ownedByMe(stats: Stats): boolean {
  const uid = process.getuid?.();
  return uid === undefined || stats.uid === uid;
}

function readSmall(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}
