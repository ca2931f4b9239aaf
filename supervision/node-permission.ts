// Node's permission model as a partial backend: reads anywhere but /proc, /dev and the shared temp
// directories (the run's own private one, workspace and launch files excepted), writes only under the
// granted directories, no child processes, no worker threads, no addons, no inspector, and from
// Node 25 on no network unless the policy grants it (--allow-net, all or nothing; older Nodes have
// no network rule and leave it open). It checks path strings, not what the kernel opens: a symlink that
// already exists inside a writable root is followed out of it (Node documents this limitation).
// The carrier shares the host's user and pid namespace, so /proc would hand the program the
// host's environment, command line and open files; its signals are kept in by the carrier itself.
// Shared by the host and the relay, which confines carriers on the far side of SSH.
import { readdirSync } from 'node:fs';

/** The permission flag's name, which depends on the Node version (host/sandbox/detect.ts). */
export type PermissionFlag = '--permission' | '--experimental-permission';

/** Hidden from reads: the host's processes are listed in /proc, and /dev holds the host's terminals (/dev/pts). */
const HIDDEN_ROOTS = new Set(['proc', 'dev']);
/** The devices a program may read in place of /dev: the ones with nothing of the host's in them. */
const DEVICES = ['/dev/full', '/dev/null', '/dev/random', '/dev/urandom', '/dev/zero'];
const FDINFO = '/proc/self/fdinfo';

/** Node options granting reads under `readable`, writes under `writable` (real paths), and the
 * network with `allowNet` (Node 25 and later refuse it under the model unless granted). */
export function permissionArgs(flag: PermissionFlag, writable: string[], readable: string[], { allowNet = false }: { allowNet?: boolean } = {}): string[] {
  const args: string[] = [flag];
  for (const path of new Set(readable)) args.push(`--allow-fs-read=${path}`);
  // One flag per path: Node 24 no longer splits on commas, and a grant for a directory covers
  // everything under it.
  for (const path of new Set(writable)) args.push(`--allow-fs-write=${path}`);
  if (allowNet) args.push('--allow-net');
  // Node 20 warns on every start that the model is experimental, Node 26 that --allow-net is;
  // that would land in program stderr.
  if (flag === '--experimental-permission' || allowNet) args.push('--disable-warning=ExperimentalWarning');
  return args;
}

/** Paths whose reads a launch takes away, and the paths inside them it gives back. */
export interface ReadScope {
  /** Real, absolute directories hidden like /proc and /dev: the shared temp directories, where
   * other runs' private directories are (sharedTempPaths in host-temp.ts). */
  hidden: string[];
  /** Real paths inside hidden ones that the run reads: its private temp directory, workspace,
   * writable roots, cwd and the files its launch runs. */
  exposed: string[];
}

/** Read grants for everything but /proc and /dev (plus the plain devices) and `scope.hidden`, and
 * for `scope.exposed`; on Linux also the carrier's own /proc/self/fdinfo, which tells it the
 * descriptors it inherited (protocol/descriptors.ts) and holds only their offsets and flags. Node's model can only grant, never carve a hole, so each directory on the
 * way to a hidden one is granted entry by entry, as listed now. On Windows, everything: there is
 * no /proc or /dev to hide, and a listing of `/` would name only the current drive's folders. */
export function readableRoots(scope: ReadScope = { hidden: [], exposed: [] }, platform: NodeJS.Platform = process.platform, list: (directory: string) => string[] = (directory) => readdirSync(directory)): string[] {
  if (platform === 'win32') return ['*'];
  const hidden = new Set(['/proc', '/dev', ...scope.hidden.filter((path) => path.startsWith('/') && path !== '/')]);
  const grants: string[] = [];
  const expand = (directory: string): void => {
    let entries: string[];
    try {
      entries = list(directory);
    } catch {
      return; // unlistable: nothing under it is granted but what is exposed
    }
    for (const name of [...entries].sort()) {
      const path = directory === '/' ? `/${name}` : `${directory}/${name}`;
      if (hidden.has(path)) continue;
      if ([...hidden].some((inner) => inner.startsWith(`${path}/`))) expand(path);
      else grants.push(path);
    }
  };
  expand('/');
  const inside = (path: string, root: string): boolean => path === root || path.startsWith(`${root}/`);
  const exposed = [...new Set(scope.exposed)].filter((path) => [...hidden].some((root) => inside(path, root)));
  // Node 20 loses a directory's grant when a path inside it is granted too (a file in the cwd
  // denied), so a path inside another exposed one is left to that one's grant.
  const roots = [...grants, ...DEVICES, ...exposed.filter((path) => !exposed.some((other) => other !== path && inside(path, other)))];
  return platform === 'linux' ? [...roots, FDINFO] : roots;
}

/** Appends options to a NODE_OPTIONS value, quoting them the way Node's parser reads them back. */
export function appendNodeOptions(existing: string | undefined, args: string[]): string {
  const quoted = args.map((arg) => (/[\s"\\]/.test(arg) ? `"${arg.replace(/["\\]/g, '\\$&')}"` : arg));
  return [existing?.trim(), ...quoted].filter((part) => part !== undefined && part !== '').join(' ');
}
