// What a carrier's process tree has put on disk, for maxDiskMb. Measured from outside the tree,
// by the host for a local carrier and by the relay for one on its machine (so it sits with the
// wire code both share): the carrier cannot be trusted to report itself. Two parts:
//   - storage writes: write_bytes - cancelled_write_bytes of /proc/<pid>/io, summed over the
//     tree. The kernel counts a page when a task dirties it (write, mmap, O_DIRECT, splice alike),
//     in that task, and folds a reaped child's count into its parent, so a fill by short-lived
//     children stays counted; what was truncated before it reached the disk is taken off again.
//     It is a budget of writes: deleting a written file gives nothing back. fallocate(2), which
//     allocates blocks without writing them, is refused by bwrap's seccomp filter (glibc's
//     posix_fallocate then writes the blocks, which counts).
//   - RAM-backed directories the program may write (a writable root or private temp directory on
//     a tmpfs of the host, where no storage write happens): their growth since the carrier
//     started, walked file by file; a file's allocated blocks count (so sparse files count what
//     they hold) and at least one page each (an empty file still holds an inode), hard links once.
import { lstatSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { processTree, readProcFile } from './process-tree.ts';

/** statfs f_type of file systems whose files live in RAM (linux/magic.h): writes to them are no storage writes. */
const RAM_FILE_SYSTEMS = new Set([0x01021994 /* TMPFS_MAGIC */, 0x858458f6 /* RAMFS_MAGIC */]);
/** A file on a tmpfs holds at least this much (an inode and dentry, or its first page). */
const PAGE_BYTES = 4096;
/** The watch samples at most this far apart, and as often as MIN when the tree writes fast. */
export const DISK_SAMPLE_MS = 50;
const MIN_DISK_SAMPLE_MS = 10;
/** Walks of the RAM-backed directories are spaced by this many times the last walk's duration,
 * unless their file systems grew enough (statfs, one call each) that the limit may be passed. */
const WALK_SHARE = 10;

export interface DiskUsage {
  /** Written to storage by the tree since the watch began. */
  storageBytes: number;
  /** Growth of the RAM-backed writable directories since the watch began. */
  ramBytes: number;
}

/** Whether this machine has /proc/<pid>/io (Linux with task I/O accounting). */
export function ioAccountingAvailable(): boolean {
  try {
    return parseIo(readFileSync('/proc/self/io', 'latin1')) !== undefined;
  } catch {
    return false;
  }
}

/** write_bytes minus cancelled_write_bytes of a /proc/<pid>/io text (proc(5)); undefined if unreadable. */
export function parseIo(text: string): number | undefined {
  const written = /^write_bytes: (\d+)$/m.exec(text);
  const cancelled = /^cancelled_write_bytes: (\d+)$/m.exec(text);
  if (written === null || cancelled === null) return undefined;
  return Number(written[1]) - Number(cancelled[1]);
}

/** Storage writes of `root` and its descendants; undefined once the tree is gone. */
export function treeStorageWrites(root: number): number | undefined {
  let bytes = 0;
  let seen = false;
  for (const pid of processTree(root)) {
    let io: number | undefined;
    try {
      io = parseIo(readProcFile(`/proc/${pid}/io`));
    } catch {
      continue; // exited between the walk and the read
    }
    if (io === undefined) continue;
    bytes += io;
    seen = true;
  }
  return seen ? bytes : undefined;
}

/** The directories of `paths` that sit on a RAM file system, each once (a path inside another is walked with it). */
export function ramBackedDirectories(paths: readonly string[]): string[] {
  const ram = paths.filter((path) => {
    try {
      return RAM_FILE_SYSTEMS.has(statfsSync(path).type);
    } catch {
      return false;
    }
  });
  return ram.filter((path) => !ram.some((other) => other !== path && path.startsWith(other.endsWith('/') ? other : `${other}/`)));
}

/** What the file systems of `directories` hold, each once: used blocks, and a page per used inode. */
export function fileSystemBytes(directories: readonly string[]): number {
  const devices = new Set<number>();
  let bytes = 0;
  for (const directory of directories) {
    try {
      const { dev } = lstatSync(directory);
      if (devices.has(dev)) continue;
      devices.add(dev);
      const fs = statfsSync(directory);
      bytes += (fs.blocks - fs.bfree) * fs.bsize + (fs.files - fs.ffree) * PAGE_BYTES;
    } catch {
      // gone
    }
  }
  return bytes;
}

/** What the files under `directories` hold, on their own file systems only; hard links count once. */
export function directoryBytes(directories: readonly string[]): number {
  const counted = new Set<string>();
  let bytes = 0;
  const visit = (path: string, device: number): void => {
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      return; // removed mid-walk
    }
    if (stat.dev !== device) return; // a mount below: not this file system's
    const key = `${stat.dev}:${stat.ino}`;
    if (!counted.has(key)) {
      counted.add(key);
      bytes += Math.max(stat.blocks * 512, PAGE_BYTES);
    }
    if (!stat.isDirectory()) return;
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) visit(join(path, name), device);
  };
  for (const directory of directories) {
    try {
      visit(directory, lstatSync(directory).dev);
    } catch {
      // gone
    }
  }
  return bytes;
}

/**
 * Watches the disk use of `root`'s tree against `limitBytes` from now on, and calls `onOver` once
 * with what it saw when the tree passes it (the caller kills). Sampling speeds up as the tree
 * writes faster, so a burst is caught within about MIN_DISK_SAMPLE_MS; it stops when the tree is gone.
 */
export class DiskWatch {
  readonly #root: number;
  readonly #limitBytes: number;
  readonly #directories: string[];
  readonly #onOver: (usage: DiskUsage) => void;
  readonly #storageBase: number;
  readonly #ramBase: number;
  #ram = 0;
  /** What the RAM file systems held at the last walk, and when the next unprompted walk is due. */
  #fileSystemsAtWalk = 0;
  #nextWalkAt = 0;
  #highest: DiskUsage = { storageBytes: 0, ramBytes: 0 };
  #timer: NodeJS.Timeout | undefined;
  #lastTotal = 0;
  #lastAt = 0;
  #stopped = false;
  #over = false;

  /**
   * `storageBase`: the tree's storage writes as counted earlier, while it had run no program (a
   * pooled carrier's, taken at its handshake), so the run that takes it does not wait for a walk of
   * /proc. A count from earlier can only be lower than one taken now: what the carrier itself
   * wrote in between is charged to the program, never the reverse.
   */
  constructor(root: number, limitBytes: number, ramDirectories: readonly string[], onOver: (usage: DiskUsage) => void, storageBase?: number) {
    this.#root = root;
    this.#limitBytes = limitBytes;
    this.#directories = [...ramDirectories];
    this.#onOver = onOver;
    this.#storageBase = storageBase ?? treeStorageWrites(root) ?? 0;
    this.#fileSystemsAtWalk = fileSystemBytes(this.#directories);
    this.#ramBase = this.#directories.length === 0 ? 0 : directoryBytes(this.#directories);
    this.#lastAt = performance.now();
    // Not synchronously: `onOver` may reach into an owner that is still being constructed.
    this.#schedule(DISK_SAMPLE_MS);
  }

  /** The most the tree was seen to use. */
  get usage(): DiskUsage {
    return this.#highest;
  }

  /** Samples unless the last sample is more recent than `ms`; true when the tree is over its limit. */
  sampleIfOlder(ms: number): boolean {
    return performance.now() - this.#lastAt < ms ? false : this.sample();
  }

  /** Samples now; true when the tree is over its limit (onOver has then been called). */
  sample(): boolean {
    if (this.#over) return true;
    if (this.#stopped) return false;
    const storage = treeStorageWrites(this.#root);
    if (storage === undefined) {
      this.stop(); // the tree is gone: nothing left to watch
      return false;
    }
    if (this.#directories.length > 0) this.#walkIfDue(storage - this.#storageBase);
    const ram = this.#ram;
    const now = performance.now();
    // A process that leaves the tree takes its count along; the highest total seen stands.
    this.#highest = {
      storageBytes: Math.max(this.#highest.storageBytes, storage - this.#storageBase),
      ramBytes: Math.max(this.#highest.ramBytes, ram),
    };
    const total = this.#highest.storageBytes + this.#highest.ramBytes;
    if (total > this.#limitBytes) {
      this.#over = true;
      this.stop();
      this.#onOver(this.#highest);
      return true;
    }
    const rate = (total - this.#lastTotal) / Math.max(1, now - this.#lastAt);
    this.#lastTotal = total;
    this.#lastAt = now;
    const untilFull = rate > 0 ? (this.#limitBytes - total) / rate : DISK_SAMPLE_MS;
    this.#schedule(Math.max(MIN_DISK_SAMPLE_MS, Math.min(DISK_SAMPLE_MS, untilFull / 2)));
    return false;
  }

  /** Walks the RAM-backed directories when due, or sooner when their file systems grew by what
   * could take the tree past its limit (another writer's deletions can hide growth there, so the
   * spaced walks stay). Many small files fill inodes more than blocks: each counts a page. */
  #walkIfDue(storage: number): void {
    const start = performance.now();
    const held = fileSystemBytes(this.#directories);
    const grown = held - this.#fileSystemsAtWalk;
    if (start < this.#nextWalkAt && storage + this.#ram + grown <= this.#limitBytes) return;
    this.#fileSystemsAtWalk = held;
    this.#ram = Math.max(0, directoryBytes(this.#directories) - this.#ramBase);
    this.#nextWalkAt = performance.now() + (performance.now() - start) * WALK_SHARE;
  }

  #schedule(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.sample(), ms);
    this.#timer.unref();
  }

  /** Stops watching (idempotent). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }
}

/** The failure message of a disk overrun: names the limit and what was used. */
export function diskMessage(limitMb: number, used: DiskUsage): string {
  const total = used.storageBytes + used.ramBytes;
  const parts = used.ramBytes === 0
    ? ''
    : ` (${mib(used.storageBytes)} MiB written to storage, ${mib(used.ramBytes)} MiB held in RAM-backed writable directories)`;
  return `the carrier's process tree wrote ${mib(total)} MiB to disk${parts}, over its maxDiskMb limit of ${limitMb.toLocaleString('en-US')} MiB, and was killed`;
}

function mib(bytes: number): string {
  return Math.ceil(bytes / 1024 / 1024).toLocaleString('en-US');
}
