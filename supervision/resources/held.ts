// Memory a carrier's process tree holds outside its resident set, for the maxMemoryMb watchdog:
// files in tmpfs mounts of the tree's own (the bwrap sandbox's /dev/shm and private temp
// directory) and memfd files it has open. Neither shows in VmRSS until mapped and touched, and a tmpfs file outlives its writer, so
// a tree at 10 MiB of RSS could hold gigabytes of host memory. The host reads all of it from
// /proc, as it does RSS: the carrier cannot be trusted to report it.
import { readdirSync, readFileSync, readlinkSync, statfsSync, statSync } from 'node:fs';
import { residentBytes, treeOf } from './proc.ts';
import { readProcFile } from '../process-tree.ts';

export interface MemoryUsage {
  /** VmRSS summed over the tree (proc.ts). */
  rssBytes: number;
  /** What heldBytes() finds. */
  heldBytes: number;
}

/** The memory the watchdog counts against maxMemoryMb for `root` and its descendants; undefined once the tree is gone. */
export function treeMemory(root: number): MemoryUsage | undefined {
  const pids: number[] = [];
  let rssBytes = 0;
  for (const pid of treeOf(root)) {
    try {
      rssBytes += residentBytes(readProcFile(`/proc/${pid}/status`));
      pids.push(pid);
    } catch {
      // exited between the walk and the read
    }
  }
  return pids.length === 0 ? undefined : { rssBytes, heldBytes: heldBytes(pids) };
}

/**
 * Bytes held by the processes `pids` in tmpfs mounts that are not the host's own (a tmpfs of the
 * host's that the sandbox sees, such as /run with the network shared, holds the host's memory) and
 * in memfd files open in them. Each mount and each file counts once; a page that is also mapped
 * and touched counts again in RSS.
 */
export function heldBytes(pids: readonly number[]): number {
  const own = ownMountNamespace();
  const namespaces = new Set<string>();
  const mounts = new Set<string>();
  const files = new Set<string>();
  let bytes = 0;
  for (const pid of pids) {
    let namespace: string;
    try {
      namespace = readlinkSync(`/proc/${pid}/ns/mnt`);
    } catch {
      continue; // exited mid-walk
    }
    if (namespace !== own && !namespaces.has(namespace)) {
      namespaces.add(namespace);
      bytes += tmpfsBytes(pid, mounts);
    }
    bytes += memfdBytes(pid, files);
  }
  return bytes;
}

interface Mount {
  device: string;
  mountPoint: string;
  type: string;
}

function tmpfsBytes(pid: number, counted: Set<string>): number {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/mountinfo`, 'utf8');
  } catch {
    return 0;
  }
  let host: Set<string> | undefined;
  let bytes = 0;
  for (const mount of parseMountInfo(text)) {
    if (mount.type !== 'tmpfs' || counted.has(mount.device)) continue;
    host ??= hostDevices();
    if (host.has(mount.device)) continue;
    counted.add(mount.device);
    bytes += mountBytes(`/proc/${pid}/root${mount.mountPoint}`, mount);
  }
  return bytes;
}

function mountBytes(path: string, mount: Mount): number {
  try {
    // The path reaches the topmost mount there: measure only if that is this one. A mount hidden
    // under another (the sandbox's /tmp under a writable root /tmp) was hidden by bwrap while it
    // set the sandbox up, before the program ran, and no user namespace can be made inside to
    // mount anything later: it holds nothing.
    if (deviceOf(statSync(path).dev) !== mount.device) return 0;
    const fs = statfsSync(path);
    return (fs.blocks - fs.bfree) * fs.bsize;
  } catch {
    return 0; // unmounted since the mountinfo was read
  }
}

/** memfd files open in `pid`, by their inode: they live in the kernel's internal tmpfs (or hugetlbfs), which no mount shows. */
function memfdBytes(pid: number, counted: Set<string>): number {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return 0;
  }
  let bytes = 0;
  for (const fd of fds) {
    const path = `/proc/${pid}/fd/${fd}`;
    try {
      if (!readlinkSync(path).startsWith('/memfd:')) continue;
      const stat = statSync(path);
      const key = `${stat.dev}:${stat.ino}`;
      if (counted.has(key)) continue;
      counted.add(key);
      bytes += stat.blocks * 512;
    } catch {
      // closed mid-walk
    }
  }
  return bytes;
}

/** The fields of /proc/<pid>/mountinfo lines (proc(5)) this module reads; octal escapes decoded. */
export function parseMountInfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const separator = fields.indexOf('-');
    if (separator < 6) continue;
    mounts.push({
      device: fields[2]!,
      mountPoint: fields[4]!.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))),
      type: fields[separator + 1] ?? '',
    });
  }
  return mounts;
}

let ownNamespace: string | undefined;

function ownMountNamespace(): string {
  ownNamespace ??= readlinkSync('/proc/self/ns/mnt');
  return ownNamespace;
}

/** The devices of the host's own mounts, read when a sandbox shows a tmpfs (a host mount made later propagates into it). */
function hostDevices(): Set<string> {
  return new Set(parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8')).map((mount) => mount.device));
}

/** st_dev as mountinfo writes it, major:minor (the kernel's new_encode_dev layout). */
function deviceOf(dev: number): string {
  const major = ((dev >>> 8) & 0xfff) | Math.floor(dev / 2 ** 32) & ~0xfff;
  const minor = (dev & 0xff) | ((dev >>> 12) & 0xfff00);
  return `${major}:${minor}`;
}
