// What the carrier can tell of its own confinement from inside: whether it runs in bubblewrap's
// fresh root, and which of its mounts are the empty read-only tmpfs placeholders (`/`, `/tmp`,
// `/run`, ...) that stand where the host's directories were (docs/host-view.md). A path whose
// nearest mount is such a placeholder is outside every directory the sandbox shows of the host.
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { append, NumberCtor, ownKeys, regexpExec, splitLines, StringCtor, stringIncludes, stringStartsWith } from './intrinsics.ts';

interface Mount {
  point: string;
  placeholder: boolean;
}

/** The mounts, deepest last; undefined outside bubblewrap's fresh root (or where /proc cannot be read). */
let mounts: Mount[] | undefined;
/**
 * Whether the fresh root has no network interface but loopback: read when an error first asks (a
 * failed lookup or connection), not at start-up, where it cost every carrier ~0.4 ms; the program
 * cannot change the interfaces (bubblewrap leaves it no capability), so it is read once.
 */
let offline: boolean | undefined;
// Captured before any program exists: a program may replace node:os's export.
const interfacesOf = networkInterfaces;

// "<id> <parent> <dev> <root> <mount point> <options> ... - <fstype> <source> <super options>"
const MOUNTINFO_LINE = /^\S+ \S+ \S+ (\S+) (\S+) (\S+)(?: \S+)*? - (\S+) /;
const OCTAL = /\\([0-7]{3})/g;

/** Reads the carrier's mount table; call once at start-up, before any program code. */
export function readSandboxView(): void {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return; // no /proc to read (the permission model hides it): nothing to tell
  }
  // bubblewrap builds the new root on a tmpfs it mounts as "/newroot" before pivoting into it;
  // elsewhere (the host's own root, a container's) the table is not parsed at all.
  if (!stringIncludes(text, ' /newroot / ')) return;
  const found: Mount[] = [];
  let freshRoot = false;
  for (const line of splitLines(text)) {
    const match = regexpExec(MOUNTINFO_LINE, line);
    if (match === null) continue;
    const point = match[2]!.replace(OCTAL, (_, octal: string) => StringCtor.fromCharCode(NumberCtor.parseInt(octal, 8)));
    const placeholder = match[4] === 'tmpfs' && stringStartsWith(`${match[3]},`, 'ro,');
    if (point === '/') freshRoot = match[4] === 'tmpfs' && match[1] === '/newroot';
    append(found, { point, placeholder });
  }
  if (!freshRoot) return;
  mounts = found;
}

/** Whether the carrier runs in bubblewrap's fresh root. */
export function inFreshRoot(): boolean {
  return mounts !== undefined;
}

/** Whether the absolute `path` lies outside every directory the sandbox shows of the host. */
export function hiddenFromHost(path: string): boolean {
  if (mounts === undefined || !stringStartsWith(path, '/')) return false;
  let nearest: Mount | undefined;
  for (let index = 0; index < mounts.length; index++) {
    const mount = mounts[index]!;
    const inside = mount.point === '/' || path === mount.point || stringStartsWith(path, `${mount.point}/`);
    if (inside && (nearest === undefined || mount.point.length >= nearest.point.length)) nearest = mount;
  }
  return nearest !== undefined && nearest.placeholder && path !== nearest.point;
}

/** Whether the sandbox has no network interface but loopback (bubblewrap's --unshare-net). */
export function networkOff(): boolean {
  if (mounts === undefined) return false;
  return (offline ??= onlyLoopback());
}

function onlyLoopback(): boolean {
  try {
    const interfaces = interfacesOf();
    // Own names only: a for-in would also visit what a program put on Object.prototype.
    const names = ownKeys(interfaces);
    for (let each = 0; each < names.length; each++) {
      const addresses = interfaces[names[each] as string] ?? [];
      for (let index = 0; index < addresses.length; index++) if (addresses[index]!.internal !== true) return false;
    }
    return true;
  } catch {
    return false;
  }
}

