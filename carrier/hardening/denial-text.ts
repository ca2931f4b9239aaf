// What a program reads when the sandbox refuses it: the path or host refused, and the ptc option
// (CLI flag and config field) that would allow it. Node's own text names its flags
// (`Use --allow-fs-read to manage permissions.`), which a ptc user cannot pass, and bubblewrap's
// refusals look like a missing file (ENOENT) or a dead resolver (EAI_AGAIN). Pure text: the
// decisions of when a message applies are in denials.ts.
import { stringStartsWith } from './intrinsics.ts';

const WORKSPACE = 'its directory as a writable root (--writable-root, policy.writableRoots) or as the workspace (--cwd, policy.workspaceRoot)';
const NETWORK = '--allow-network (policy.network: true) turns it on, or --allow-host <name> (policy.network.allow) lets through one destination under bubblewrap';

/** Whether `path` lies in /proc or /dev, which no policy can open to a confined program (policy.ts refuses them as roots). */
function privateMount(path: string): boolean {
  return path === '/proc' || path === '/dev' || stringStartsWith(path, '/proc/') || stringStartsWith(path, '/dev/');
}

/**
 * The message for Node's permission-model refusal `permission` of `resource` (the fields of its
 * ERR_ACCESS_DENIED), or undefined for a permission ptc has no words for.
 */
export function permissionDenialText(permission: string | undefined, given: string | undefined, hostname: string | undefined, address?: string): string | undefined {
  // Node 20 gives an empty resource for a refused process.
  const resource = given === '' ? undefined : given;
  const shown = JSON.stringify(resource ?? '');
  switch (permission) {
    case 'FileSystemRead':
      if (resource !== undefined && privateMount(resource)) return `ptc sandbox refused reading ${shown}: /proc and /dev are hidden from confined programs`;
      return `ptc sandbox refused reading ${shown} (node-permission: outside what this run may read); ${WORKSPACE} allows it`;
    case 'FileSystemWrite':
      if (resource !== undefined && privateMount(resource)) return `ptc sandbox refused writing ${shown}: /proc and /dev are closed to confined programs`;
      return `ptc sandbox refused writing ${shown} (node-permission: outside the directories this run may write); ${WORKSPACE}, with --sandbox workspace-write (policy.mode), allows it`;
    case 'ChildProcess':
      return `ptc sandbox refused starting a process${resource === undefined ? '' : ` (${shown})`}: the node-permission backend allows none; the bwrap backend does (--sandbox-backend bwrap, sandbox.backend)`;
    case 'WorkerThreads':
      return 'ptc sandbox refused starting a worker thread: the node-permission backend allows none; the bwrap backend does (--sandbox-backend bwrap, sandbox.backend)';
    case 'Net':
    case undefined:
      if (hostname !== undefined) return `ptc sandbox refused looking up ${JSON.stringify(hostname)}: the network is off for this run; ${NETWORK}`;
      if (address !== undefined) return `ptc sandbox refused connecting to ${JSON.stringify(address)}: the network is off for this run; ${NETWORK}`;
      return `ptc sandbox refused a connection: the network is off for this run; ${NETWORK}`;
    default:
      return undefined;
  }
}

/** What follows bubblewrap's ENOENT for `path`, a path outside every directory the sandbox shows of the host. */
export function hiddenPathText(path: string): string {
  if (privateMount(path)) return ` (ptc sandbox: ${JSON.stringify(path)} is outside what the bubblewrap sandbox shows of the host; its /proc and /dev are its own, and no policy brings the host's in)`;
  return ` (ptc sandbox: ${JSON.stringify(path)} is outside what the bubblewrap sandbox shows of the host; if it exists there, ${WORKSPACE} brings it in)`;
}

/** What follows a lookup or connection that failed because the sandbox has no network. */
export function networkOffText(target: string | undefined): string {
  return ` (ptc sandbox: the network is off for this run, so ${target === undefined ? 'nothing outside it is reached' : `${JSON.stringify(target)} is not reached`}; ${NETWORK})`;
}

/** What follows bubblewrap's EROFS for `path`: a file in a directory the sandbox binds read-only. */
export function readOnlyPathText(path: string): string {
  return ` (ptc sandbox: ${JSON.stringify(path)} is read-only in the bubblewrap sandbox; ${WORKSPACE}, with --sandbox workspace-write (policy.mode), makes it writable)`;
}
