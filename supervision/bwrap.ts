// bubblewrap arguments for one carrier: a fresh root (a read-only tmpfs) holding only what is
// bound into it (docs/host-view.md): the host's system directories and the /etc files programs
// read (host-view.ts), the launch's files, the workspace (read-only in read-only mode) and the cwd,
// the policy's writable roots read-write; fresh read-only /dev with a sized /dev/shm, fresh
// read-only /proc, a private read-only /tmp (and temp directory, when elsewhere) holding only the
// run's temp directory (a sized tmpfs), an empty read-only /run, and new pid, ipc and (unless the
// whole network is allowed) network namespaces. Pure: paths arrive resolved, and the argv is a
// function of them alone. Both the host (local carriers) and the relay (carriers on the far side
// of SSH) confine with it. bwrap reads the seccomp filter (seccomp.ts) from SECCOMP_FD, which
// every spawn of this argv must supply.
import { SECCOMP_FD } from './seccomp.ts';
import type { SandboxMode } from '../wire/sandbox-modes.ts';

/** The parts of a resolved policy (host/sandbox/policy.ts) that shape a sandbox; paths are real. */
export interface ConfinedPolicy {
  mode: SandboxMode;
  /** Only `true` shares the host's network; false and an allowlist (reached through the proxy's
   * socket, bound in like a launch path) get a namespace of their own. */
  network: boolean | { allow: string[] };
  workspaceRoot: string;
  writableRoots: string[];
}

/** The directories a program may write besides its private temp directory. */
export function writablePaths(policy: ConfinedPolicy): string[] {
  if (policy.mode !== 'workspace-write') return [];
  return [policy.workspaceRoot, ...policy.writableRoots.filter((root) => root !== policy.workspaceRoot)];
}

/** One entry of the sandbox's root taken from the host (host-view.ts): bound read-only, or a symlink made anew. */
export type SystemEntry = { path: string; kind: 'bind'; /** What is bound there, when not `path` itself. */ source?: string } | { path: string; kind: 'symlink'; target: string };

export interface BwrapLayout {
  /** The host's system directories and /etc files, as they exist (host-view.ts systemEntries()). */
  system?: SystemEntry[];
  /** The run's private temp directory (real path): a sized tmpfs is mounted over it. */
  privateTmp: string;
  /** Real paths the launch reads (executable, script, caches); bound read-only unless a bound directory shows them. */
  launchPaths?: string[];
  /** The carrier's working directory, bound read-only unless writable: entered with --chdir, so a missing one fails the launch loudly. */
  cwd?: string;
  /** Where /etc/resolv.conf really lives when under /run (resolver.ts): bound back read-only with the network. */
  resolver?: string;
  /** Real directories besides /tmp made private like it: a temp directory elsewhere (TMPDIR),
   * where the other runs' private directories are. */
  hidden?: string[];
  /** Read-only binds into the sandbox's own /run, made before it is remounted read-only (the
   * allowlist proxy's directory, at a path short enough for a socket). */
  runBinds?: Array<{ source: string; target: string }>;
}

const PRIVATE_TMP = '/tmp';
/**
 * The RAM-backed places a program may write are sized: /dev/shm (Docker's default --shm-size)
 * and the private temp directory, a tmpfs over the host directory that names it, gone with the
 * sandbox. /dev, /run and /tmp are tmpfs too, all read-only once their mount points exist, and no
 * user namespace can be made inside to mount another. Under maxMemoryMb what the two hold also
 * counts against the limit (protocol/resources/held.ts).
 */
export const SHM_BYTES = 64 * 1024 * 1024;
export const PRIVATE_TMP_BYTES = 512 * 1024 * 1024;

/** The bwrap options (everything before `--`) that confine a carrier to `policy`. */
export function bwrapArgs(policy: ConfinedPolicy, layout: BwrapLayout): string[] {
  const writable = [...writablePaths(policy), layout.privateTmp];
  const system = layout.system ?? [];
  const shared = policy.network === true;
  // A directory bound whole already shows what lies in it.
  const shown = system.filter((entry) => entry.kind === 'bind').map((entry) => entry.path);
  // The host's /tmp and temp directory are replaced, so other runs' files there stay out of sight
  // even where a bound directory contains them; one inside a writable root is the program's to
  // write anyway: hiding it would cover the root.
  const hidden = [PRIVATE_TMP, ...unique(layout.hidden ?? []).filter((path) => path !== '/' && !within(path, PRIVATE_TMP) && !writable.some((root) => within(path, root)))];
  // Everything else the program may read is bound: the launch's files, the workspace in read-only
  // mode, its cwd.
  const readable = [...(layout.launchPaths ?? []), ...(policy.mode === 'read-only' ? [policy.workspaceRoot] : []), ...(layout.cwd === undefined ? [] : [layout.cwd])]
    .filter((path) => !writable.some((root) => within(path, root)) && !shown.some((root) => within(path, root)));
  const mounts: Array<{ path: string; args: string[] }> = [
    ...system.map((entry) => ({ path: entry.path, args: entry.kind === 'bind' ? ['--ro-bind', entry.source ?? entry.path, entry.path] : ['--symlink', entry.target, entry.path] })),
    ...hidden.map((path) => ({ path, args: ['--tmpfs', path] })),
    ...unique(readable).map((path) => ({ path, args: ['--ro-bind', path, path] })),
    ...unique(writable).map((path) => ({ path, args: path === layout.privateTmp ? privateTmpArgs(path) : ['--bind', path, path] })),
    // The sandbox's own /run, empty: the host's service sockets (docker, containerd, the dbus
    // buses, systemd's own) are not there, with the network or without (a network namespace does
    // not cover Unix sockets on the file system). With the network the resolver's directory comes back.
    { path: '/run', args: ['--tmpfs', '/run'] },
    ...(shared && layout.resolver !== undefined ? [{ path: layout.resolver, args: ['--ro-bind', layout.resolver, layout.resolver] }] : []),
    ...(layout.runBinds ?? []).map(({ source, target }) => ({ path: target, args: ['--ro-bind', source, target] })),
  ];
  // A parent is mounted before anything inside it, or it would cover the child's mount (stable:
  // at equal depth the order above holds).
  mounts.sort((a, b) => depth(a.path) - depth(b.path));

  // /proc read-only: root without capabilities still writes every sysctl that checks only file
  // modes (kernel.core_pattern runs a helper as host root), and /proc/sysrq-trigger. /sys is absent.
  const args = ['--dev', '/dev', ...sharedMemoryArgs(), '--proc', '/proc', '--remount-ro', '/proc'];
  for (const mount of mounts) args.push(...mount.args);
  // Read-only once the mount points exist; non-recursive, so the binds inside keep their modes.
  for (const path of hidden) if (!writable.includes(path)) args.push('--remount-ro', path);
  // Read-only /dev, /run and root: RAM-backed, unbounded tmpfs mounts a program could otherwise fill.
  args.push('--remount-ro', '/dev', '--remount-ro', '/run', '--remount-ro', '/');
  // --unshare-pid: every descendant dies with the sandbox's pid 1. --cap-drop ALL: a host running
  // as root would otherwise keep CAP_SYS_ADMIN inside and could remount / read-write.
  // Nested user namespaces (in which a program could mount an unbounded tmpfs) are refused by the
  // seccomp filter, as are mounts.
  args.push('--unshare-pid', '--unshare-ipc');
  if (!shared) args.push('--unshare-net');
  args.push('--cap-drop', 'ALL', '--die-with-parent', '--new-session', '--seccomp', String(SECCOMP_FD));
  if (layout.cwd !== undefined) args.push('--chdir', layout.cwd);
  return args;
}

/** /dev/shm as a world-writable tmpfs of SHM_BYTES, over the directory bwrap's --dev makes. */
export function sharedMemoryArgs(): string[] {
  return ['--perms', '1777', '--size', String(SHM_BYTES), '--tmpfs', '/dev/shm'];
}

function privateTmpArgs(path: string): string[] {
  return ['--perms', '0700', '--size', String(PRIVATE_TMP_BYTES), '--tmpfs', path];
}

/** True when `path` is `root` or inside it (both real, absolute). */
export function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root === '/' ? '/' : `${root}/`);
}

function depth(path: string): number {
  return path === '/' ? 0 : path.split('/').length - 1;
}

function unique(paths: string[]): string[] {
  return [...new Set(paths)];
}
