// The carrier command the relay runs on its machine, from the host's start frame: this Node running
// this bootstrap, with the heap limit, under the backend the host chose from what this machine
// offers (bwrap, Node's permission model, or none). Policy paths are resolved here, where they live.
// A relay that runs from the bytes its loader read and verified (a data: URL, transports/ssh.ts on
// the host) hands its carrier those same bytes on SOURCE_FD (5), never the file's path: the file may have
// been swapped since it was read. The private temp directory is in this relay's host directory
// (protocol/host-temp.ts), and the shared temp directories around it are hidden from the program,
// as on the host.
import { realpathSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import { bwrapArgs, within, writablePaths, type ConfinedPolicy } from './bwrap.ts';
import { privateDirectory, sharedTempPaths } from './host-temp.ts';
import { systemEntries } from './host-view.ts';
import { bwrapCommand, privateMountPrefix } from './private-mounts.ts';
import { permissionArgs, readableRoots } from './node-permission.ts';
import { seccompFilter, seccompUnavailable } from './seccomp.ts';
import { resolverLayout } from './resolver.ts';
import { NETWORK_SOCKET_ENV, proxyEnvironment } from '../wire/network.ts';
import type { RelayStart } from '../wire/mux.ts';

export interface CarrierLaunch {
  executable: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** The carrier's private temp directory, removed by the relay once the carrier is gone. */
  privateTmp: string | undefined;
  /** The directories the program may write here (for the disk watch). */
  writable: string[];
  /** bubblewrap's seccomp filter, handed over on SECCOMP_FD (protocol/seccomp-fd.ts). */
  seccompFilter?: Uint8Array;
  /** The bootstrap's bytes, for the relay to write to the carrier's SOURCE_FD and close. */
  source?: Uint8Array;
  /** With an allowlist: the directory, bound at SANDBOX_NETWORK_DIRECTORY, where the relay listens
   * on PROXY_SOCKET_NAME for the sandbox's connections to the host's proxy; removed with privateTmp. */
  networkDirectory?: string;
}

/** Where the sandbox sees the proxy socket's directory, as on the host (host/sandbox/allowlist.ts). */
export const SANDBOX_NETWORK_DIRECTORY = '/run/ptc-network';
export const PROXY_SOCKET_NAME = 'proxy.sock';

/** The carrier's descriptor that carries its bootstrap's bytes; the loader closes it before they
 * run. Not 4: that is where bwrap reads its seccomp filter (SECCOMP_FD), and closes it. */
export const SOURCE_FD = 5;

/** Run with `node -e`: reads the bootstrap from SOURCE_FD to its end, closes it, and evaluates exactly that. */
const SOURCE_LOADER = `const fs=require("fs");const bytes=fs.readFileSync(${SOURCE_FD});fs.closeSync(${SOURCE_FD});import("data:text/javascript;base64,"+bytes.toString("base64"));`;

/** The bytes of a module that runs from a base64 data: URL (what the loader imported), else undefined. */
export function sourceOf(moduleUrl: string): Uint8Array | undefined {
  const prefix = 'data:text/javascript;base64,';
  return moduleUrl.startsWith(prefix) ? Buffer.from(moduleUrl.slice(prefix.length), 'base64') : undefined;
}

const KEPT_ENV = ['PATH', 'TMPDIR', 'TMP', 'TEMP'];
const TEMP_VARIABLES = ['TMPDIR', 'TMP', 'TEMP'];

/** Builds the command for `spec`, running `source` when given, else the file at `bootstrapPath`;
 * throws an Error naming the path or value that is wrong here. */
export function carrierLaunch(spec: RelayStart, bootstrapPath: string, source?: Uint8Array): CarrierLaunch {
  if (typeof spec !== 'object' || spec === null || !Number.isSafeInteger(spec.heapMb) || typeof spec.cwd !== 'string' || typeof spec.sandbox !== 'object' || spec.sandbox === null) {
    throw new Error(`invalid start frame: ${JSON.stringify(spec)}`);
  }
  const cwd = realDirectory(spec.cwd, 'working directory');
  const env: Record<string, string> = {};
  for (const name of KEPT_ENV) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  const node = process.execPath;
  const script = source === undefined ? realpathSync(bootstrapPath) : undefined;
  // As the host's local launches (host/worker/launch.ts): import handlers need VM modules.
  const heap = `--max-old-space-size=${spec.heapMb}`, vmModules = '--experimental-vm-modules';
  const entry = script === undefined ? ['-e', SOURCE_LOADER] : [script];
  const sandbox = spec.sandbox;
  const carried = source === undefined ? {} : { source };
  if (sandbox.backend === 'none') return { executable: node, args: [heap, vmModules, ...entry], env, cwd, privateTmp: undefined, writable: [], ...carried };

  const policy: ConfinedPolicy = {
    mode: sandbox.mode,
    network: sandbox.backend === 'bwrap' ? sandbox.network : true,
    workspaceRoot: realDirectory(sandbox.workspaceRoot, 'workspaceRoot'),
    writableRoots: sandbox.writableRoots.map((root, index) => realDirectory(root, `writableRoots[${index}]`)),
  };
  // This machine's own filter, for its architecture; the probe reported bwrap unavailable without one.
  const filter = sandbox.backend === 'bwrap' ? seccompFilter() : undefined;
  if (sandbox.backend === 'bwrap' && filter === undefined) throw new Error(seccompUnavailable());
  const privateTmp = privateDirectory('tmp');
  const shared = sharedTempPaths();
  for (const name of TEMP_VARIABLES) env[name] = privateTmp;
  const writable = [...writablePaths(policy), privateTmp];
  const realNode = realpathSync(node);
  const launchPaths = script === undefined ? [realNode] : [realNode, script];
  if (sandbox.backend === 'node-permission') {
    const readable = readableRoots({ hidden: shared, exposed: [...writable, policy.workspaceRoot, cwd, ...launchPaths] });
    return { executable: node, args: [...permissionArgs(sandbox.permissionFlag, writable, readable, { allowNet: sandbox.allowNet === true }), heap, vmModules, ...entry], env, cwd, privateTmp, writable, ...carried };
  }
  // An allowlist: no network namespace of the host's but loopback, and the proxy socket's directory.
  const networkDirectory = sandbox.allowlist === true && !policy.network ? privateDirectory('net') : undefined;
  if (networkDirectory !== undefined) Object.assign(env, proxyEnvironment(), { [NETWORK_SOCKET_ENV]: `${SANDBOX_NETWORK_DIRECTORY}/${PROXY_SOCKET_NAME}` });
  const { executable, args } = confinedCommand(sandbox.bwrapPath, policy, { privateTmp, sharedTemp: shared, launchPaths, cwd, networkDirectory }, [realNode, heap, vmModules, ...entry]);
  return { executable, args, env, cwd, privateTmp, writable, seccompFilter: filter, ...carried, ...(networkDirectory !== undefined ? { networkDirectory } : {}) };
}

/** What shapes a confined launch besides its policy: real paths, as the launch build resolved them. */
export interface ConfinedLayout {
  privateTmp: string;
  /** The shared temp directories around the private one (host-temp.ts sharedTempPaths()). */
  sharedTemp: string[];
  launchPaths: string[];
  cwd?: string | undefined;
  /** With an allowlist, the proxy socket's directory, bound at SANDBOX_NETWORK_DIRECTORY. */
  networkDirectory?: string | undefined;
}

/** The command that runs `command` confined to `policy` by the bwrap at `bwrapPath` on this
 * machine: its fresh root (host-view.ts), inside a mount namespace private from this machine's
 * where one can be made (private-mounts.ts). The host's launches and the relay's both build it here. */
export function confinedCommand(bwrapPath: string, policy: ConfinedPolicy, layout: ConfinedLayout, command: string[]): { executable: string; args: string[] } {
  // /tmp is replaced whole; a temp directory elsewhere is hidden at its real path.
  const hidden = layout.sharedTemp.filter((path) => !within(path, '/tmp') && path === realpathSync(path));
  const runBinds = layout.networkDirectory === undefined ? [] : [{ source: layout.networkDirectory, target: SANDBOX_NETWORK_DIRECTORY }];
  const options = bwrapArgs(policy, { system: systemEntries(), privateTmp: layout.privateTmp, launchPaths: layout.launchPaths, cwd: layout.cwd, hidden, runBinds, ...resolverLayout(policy) });
  return bwrapCommand(bwrapPath, [...options, '--', ...command], privateMountPrefix());
}

function realDirectory(path: string, what: string): string {
  if (typeof path !== 'string' || !isAbsolute(path)) throw new Error(`the ${what} must be an absolute path on ${hostname()}, got ${JSON.stringify(path)}`);
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    throw new Error(`the ${what} ${path} does not exist on ${hostname()}: ${(error as Error).message}`, { cause: error });
  }
  if (!statSync(real).isDirectory()) throw new Error(`the ${what} ${path} on ${hostname()} is not a directory`);
  return real;
}
