// Node's permission model as a partial backend: reads anywhere, writes only under the granted
// directories, no child processes, no worker threads, no addons. It does not confine the network,
// and it checks path strings, not what the kernel opens: a symlink that already exists inside a
// writable root is followed out of it (Node documents this limitation). Shared by the host and the
// relay, which confines carriers on the far side of SSH.

/** The permission flag's name, which depends on the Node version (host/sandbox/detect.ts). */
export type PermissionFlag = '--permission' | '--experimental-permission';

/** Node options granting reads everywhere and writes under `writable` (real paths). */
export function permissionArgs(flag: PermissionFlag, writable: string[]): string[] {
  const args: string[] = [flag, '--allow-fs-read=*'];
  // One flag per path: Node 24 no longer splits on commas, and a grant for a directory covers
  // everything under it.
  for (const path of new Set(writable)) args.push(`--allow-fs-write=${path}`);
  // Node 20 warns on every start that the model is experimental; that would land in program stderr.
  if (flag === '--experimental-permission') args.push('--disable-warning=ExperimentalWarning');
  return args;
}

/** Appends options to a NODE_OPTIONS value, quoting them the way Node's parser reads them back. */
export function appendNodeOptions(existing: string | undefined, args: string[]): string {
  const quoted = args.map((arg) => (/[\s"\\]/.test(arg) ? `"${arg.replace(/["\\]/g, '\\$&')}"` : arg));
  return [existing?.trim(), ...quoted].filter((part) => part !== undefined && part !== '').join(' ');
}
