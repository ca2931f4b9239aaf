// Where ptc keeps what it reads back later (the bwrap probe's answer, Node's compile cache for
// carriers): a directory of this user's that no other user can write, replace or redirect. A
// predictable path in a shared place (a world-writable /tmp) could be made first by another user,
// as a directory of theirs or a symlink, and what they put in it would reach the carrier.
import { lstatSync, mkdirSync, readlinkSync, type Stats } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';

/** Symlinks followed on the way to a directory before it is refused, as the kernel's limit (MAXSYMLINKS). */
const MAX_LINKS = 40;

/** This user's ptc cache directory: $XDG_CACHE_HOME/ptc, else ~/.cache/ptc, else <tmpdir>/ptc-cache-<uid>. */
export function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  // The XDG spec says a relative value is invalid and is to be ignored.
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, 'ptc');
  let home: string | undefined;
  try {
    home = env.HOME !== undefined && isAbsolute(env.HOME) ? env.HOME : homedir();
  } catch {
    home = undefined; // no passwd entry for this uid
  }
  if (home !== undefined && home !== '' && home !== '/') return join(home, '.cache', 'ptc');
  return join(tmpdir(), `ptc-cache-${process.getuid?.() ?? 'user'}`);
}

/**
 * Where the host keeps the keys that sign its journals' rows: $XDG_STATE_HOME/ptc/journal-keys,
 * else ~/.local/state/ptc/journal-keys, else <tmpdir>/ptc-state-<uid>/journal-keys. Every
 * sandbox hides it (wrap.ts), so no program reads a key; a run whose writable roots contain it is
 * refused by a runtime with a journal (host/runtime/journal.ts).
 */
export function journalKeyDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_STATE_HOME;
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, 'ptc', 'journal-keys');
  let home: string | undefined;
  try {
    home = env.HOME !== undefined && isAbsolute(env.HOME) ? env.HOME : homedir();
  } catch {
    home = undefined;
  }
  if (home !== undefined && home !== '' && home !== '/') return join(home, '.local', 'state', 'ptc', 'journal-keys');
  return join(tmpdir(), `ptc-state-${process.getuid?.() ?? 'user'}`, 'journal-keys');
}

/** Makes `dir` (and missing parents, mode 0700) and says whether it is private (isPrivateDirectory).
 * Nothing is made under a directory that another user could write to or replace. */
export function makePrivateDirectory(dir: string): boolean {
  if (!isAbsolute(dir)) return false;
  let existing = dir;
  while (!exists(existing)) existing = dirname(existing);
  if (existing !== dir && !safePath(existing, safeContainer)) return false;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch {
    return false; // a file in the way, a read-only home: no private directory here
  }
  return isPrivateDirectory(dir);
}

/**
 * True when `dir` is a directory this user owns that no other user can write to, and no other user
 * can replace or redirect any component of the path to it: each directory on the way (and each
 * symlink followed) belongs to this user or root, and one that others can write to is sticky
 * (/tmp), where an entry can only be renamed or removed by its owner. Windows: true (no such modes).
 */
export function isPrivateDirectory(dir: string): boolean {
  const uid = process.getuid?.();
  return safePath(dir, (stats) => stats.isDirectory() && stats.uid === uid && (stats.mode & 0o022) === 0);
}

/** Walks `path` from /, following symlinks, with every directory on the way a safe container and the last one passing `last`. */
function safePath(path: string, last: (stats: Stats) => boolean): boolean {
  const uid = process.getuid?.();
  if (uid === undefined) return true;
  if (!isAbsolute(path)) return false;
  try {
    let current = '/';
    const pending = path.split('/').filter((name) => name !== '' && name !== '.');
    if (pending.length === 0) return last(lstatSync(current));
    if (!safeContainer(lstatSync(current))) return false;
    let links = 0;
    while (pending.length > 0) {
      const next = join(current, pending.shift()!);
      const stats = lstatSync(next);
      if (!trusted(stats)) return false;
      if (stats.isSymbolicLink()) {
        if (++links > MAX_LINKS) return false;
        const target = readlinkSync(next);
        pending.unshift(...target.split('/').filter((name) => name !== '' && name !== '.'));
        if (isAbsolute(target)) current = '/';
        if (pending.length === 0) return last(lstatSync(current));
        continue;
      }
      if (pending.length === 0) return last(stats);
      if (!safeContainer(stats)) return false;
      current = next;
    }
    return false;
  } catch {
    return false;
  }
}

function trusted(stats: Stats): boolean {
  return stats.uid === process.getuid?.() || stats.uid === 0;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A directory on the way: ours or root's, and writable by others only when sticky. */
function safeContainer(stats: Stats): boolean {
  return stats.isDirectory() && trusted(stats) && ((stats.mode & 0o022) === 0 || (stats.mode & 0o1000) !== 0);
}
