// bubblewrap marks its mount namespace MS_SLAVE|MS_REC and has no option to do otherwise: a mount
// the host makes after the sandbox started, under a path the sandbox binds, would propagate in
// (without the read-only flag of the bind it lands under). Started inside a mount namespace of
// its own whose mounts are private, bwrap's namespace is a slave of that one, which receives
// nothing from the host's. util-linux's unshare makes it: as root a mount namespace alone; as
// another user a user namespace too, mapping only the user's own uid and gid to themselves, so
// bwrap's namespace inside gives the carrier the same uid as before. Where unshare is missing or
// cannot make them (an old util-linux without --map-current-user, a kernel or LSM that refuses),
// bwrap runs as before and the host view can still change (docs/host-view.md).
import { spawnSync } from 'node:child_process';
import { delimiter, isAbsolute, join } from 'node:path';
import { isExecutableFile } from './bwrap-probe.ts';

/** Where distributions install util-linux's unshare, tried after PATH. */
export const UNSHARE_LOCATIONS = ['/usr/bin/unshare', '/bin/unshare', '/run/current-system/sw/bin/unshare'];

/** The prefix (executable and its options) that runs a command in a private mount namespace. */
export interface MountPrefix {
  executable: string;
  args: string[];
}

const CHECK_TIMEOUT_MS = 10_000;
let answer: { prefix: MountPrefix | undefined } | undefined;

/** The unshare prefix usable on this machine by this user, or undefined; looked for and tried once a process. */
export function privateMountPrefix(): MountPrefix | undefined {
  answer ??= { prefix: findPrefix() };
  return answer.prefix;
}

/** The unshare options for a user: root needs no user namespace to make a mount namespace. */
export function unshareArgs(uid: number | undefined): string[] {
  const user = uid === 0 ? [] : ['--user', '--map-current-user'];
  return [...user, '--mount', '--propagation', 'private'];
}

/** The command that runs bwrap with `args`, inside the private mount namespace when `prefix` (privateMountPrefix()) is one. */
export function bwrapCommand(bwrapPath: string, args: string[], prefix: MountPrefix | undefined): MountPrefix {
  return prefix === undefined ? { executable: bwrapPath, args } : { executable: prefix.executable, args: [...prefix.args, bwrapPath, ...args] };
}

function findPrefix(): MountPrefix | undefined {
  if (process.platform !== 'linux') return undefined;
  const executable = locateUnshare();
  if (executable === undefined) return undefined;
  const args = unshareArgs(process.getuid?.());
  // The namespaces are made before the command runs: a clean exit means launches can make them.
  const result = spawnSync(executable, [...args, executable, '--version'], { stdio: 'ignore', timeout: CHECK_TIMEOUT_MS, env: {} });
  return result.status === 0 ? { executable, args } : undefined;
}

/** The first executable `unshare` in PATH's absolute directories or UNSHARE_LOCATIONS. */
export function locateUnshare(path: string | undefined = process.env.PATH): string | undefined {
  const dirs = (path ?? '').split(delimiter).filter((dir) => isAbsolute(dir));
  return [...dirs.map((dir) => join(dir, 'unshare')), ...UNSHARE_LOCATIONS].find(isExecutableFile);
}
