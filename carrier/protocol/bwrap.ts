// bubblewrap arguments for one carrier: the whole host read-only, fresh /dev and /proc, a private
// read-only /tmp (and temp directory, when elsewhere) holding only the run's temp directory, the
// policy's writable roots bound read-write, and new pid, ipc and (unless the whole network is
// allowed) network namespaces. Pure: paths arrive
// resolved, and the argv is a function of them alone. It lives with the wire code because both the
// host (local carriers) and the relay (carriers on the far side of SSH) confine with it.

/** The parts of a resolved policy (host/sandbox/policy.ts) that shape a sandbox; paths are real. */
export interface ConfinedPolicy {
  mode: 'read-only' | 'workspace-write' | 'full-access';
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

export interface BwrapLayout {
  /** The run's private temp directory (real path), bound writable. */
  privateTmp: string;
  /** Real paths the launch reads (executable, script, caches); bound read-only where /tmp hides them. */
  launchPaths?: string[];
  /** The carrier's working directory: entered with --chdir, so a missing one fails the launch loudly. */
  cwd?: string;
  /** Real directories besides /tmp made private like it: a temp directory elsewhere (TMPDIR),
   * where the other runs' private directories are. */
  hidden?: string[];
}

const PRIVATE_TMP = '/tmp';

/** The bwrap options (everything before `--`) that confine a carrier to `policy`. */
export function bwrapArgs(policy: ConfinedPolicy, layout: BwrapLayout): string[] {
  const writable = [...writablePaths(policy), layout.privateTmp];
  // The host's /tmp is replaced, so what the program may read there must be bound back:
  // the workspace in read-only mode, its cwd, and the files the launch itself runs.
  // One inside a writable root is the program's to write anyway: hiding it would cover the root.
  const hidden = [PRIVATE_TMP, ...unique(layout.hidden ?? []).filter((path) => path !== '/' && !within(path, PRIVATE_TMP) && !writable.some((root) => within(path, root)))];
  const readable = [...(layout.launchPaths ?? []), ...(policy.mode === 'read-only' ? [policy.workspaceRoot] : []), ...(layout.cwd === undefined ? [] : [layout.cwd])]
    .filter((path) => hidden.some((root) => within(path, root)) && !writable.some((root) => within(path, root)));
  const binds = [
    ...unique(writable).map((path) => ({ path, option: '--bind' })),
    ...unique(readable).map((path) => ({ path, option: '--ro-bind' })),
  ];
  // A parent is mounted before anything inside it, or it would cover the child's mount.
  binds.sort((a, b) => depth(a.path) - depth(b.path));

  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  for (const path of hidden) args.push('--tmpfs', path);
  // Without network the host's service sockets (docker, dbus, systemd under /run) go too: a new
  // network namespace does not cover Unix sockets that sit on the file system.
  const shared = policy.network === true;
  if (!shared) args.push('--tmpfs', '/run');
  for (const { path, option } of binds) args.push(option, path, path);
  // Read-only once the mount points exist; non-recursive, so the binds inside keep their modes.
  for (const path of hidden) if (!writable.includes(path)) args.push('--remount-ro', path);
  // --unshare-pid: every descendant dies with the sandbox's pid 1. --cap-drop ALL: a host running
  // as root would otherwise keep CAP_SYS_ADMIN inside and could remount / read-write.
  args.push('--unshare-pid', '--unshare-ipc');
  if (!shared) args.push('--unshare-net');
  args.push('--cap-drop', 'ALL', '--die-with-parent', '--new-session');
  if (layout.cwd !== undefined) args.push('--chdir', layout.cwd);
  return args;
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
