// Finding bubblewrap and the sandbox that tests it, the same way on the host (host/sandbox/detect.ts)
// and in the relay on the far side of SSH (relay/probe.ts). Neither may depend on PATH: a
// host started with `env -i PATH=/nonexistent` still has /usr/bin/bwrap, and a probe that ran
// `true` through PATH reported bwrap unusable there, so `auto` fell to node-permission in silence.
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { sharedMemoryArgs, within } from './bwrap.ts';
import { SECCOMP_FD } from './seccomp.ts';

/** Where distributions install bwrap, tried after PATH (Debian/Fedora/Arch, /usr/local builds, NixOS). */
export const BWRAP_LOCATIONS = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap', '/run/current-system/sw/bin/bwrap'];

/** The bwrap to use: the configured path, else the first executable `bwrap` in PATH's absolute
 * directories, else the first of BWRAP_LOCATIONS that exists, else /usr/bin/bwrap (so the reason
 * it is unavailable names the usual place). */
export function locateBwrap(configured: string | undefined, path: string | undefined = process.env.PATH): string {
  if (configured !== undefined) return configured;
  // A relative PATH entry would resolve against whatever the cwd happens to be.
  const dirs = (path ?? '').split(delimiter).filter((dir) => isAbsolute(dir));
  for (const candidate of [...dirs.map((dir) => join(dir, 'bwrap')), ...BWRAP_LOCATIONS]) {
    if (isExecutableFile(candidate)) return candidate;
  }
  return BWRAP_LOCATIONS[0]!;
}

/**
 * bwrap's argv for a test sandbox with the namespaces and mounts a launch uses, so a probe that
 * passes means launches can start. The program inside is bwrap itself (`--version`, which it
 * answers before touching any namespace): the one executable known to exist at an absolute path
 * wherever the probe runs. A bwrap under /tmp is bound back, as a launch binds its own files. The
 * seccomp filter (seccomp.ts) is read from `seccompFd`: a kernel that refuses it fails the probe.
 */
export function bwrapProbeArgs(bwrapPath: string, seccompFd: number = SECCOMP_FD): string[] {
  let real = bwrapPath;
  try {
    real = realpathSync(bwrapPath);
  } catch {
    // Missing: the spawn reports it.
  }
  // --size needs a recent bubblewrap (0.8 here): an older one fails the probe, so auto falls back.
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', ...sharedMemoryArgs(), '--proc', '/proc', '--remount-ro', '/proc', '--tmpfs', '/tmp'];
  if (within(real, '/tmp')) args.push('--ro-bind', real, real);
  args.push('--remount-ro', '/dev', '--unshare-pid', '--unshare-net', '--unshare-ipc', '--cap-drop', 'ALL', '--die-with-parent', '--new-session', '--seccomp', String(seccompFd), '--', real, '--version');
  return args;
}

/** True for an existing regular file this user may execute. */
export function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
