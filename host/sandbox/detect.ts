// What this machine can enforce. bubblewrap is probed once per executable by running a sandbox
// shaped like a real launch; the answer (a reason it cannot work, or undefined) is cached for the
// life of the process. Node's permission model depends only on the carrier Node's version.
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** bwrap prints its error and exits at once; a probe this slow means something is wedged. */
const PROBE_TIMEOUT_MS = 10_000;
const DEFAULT_BWRAP = '/usr/bin/bwrap';
const STDERR_LIMIT = 2_000;

export type { PermissionFlag } from '../../carrier/protocol/node-permission.ts';
import type { PermissionFlag } from '../../carrier/protocol/node-permission.ts';

/** The same namespaces and mounts a launch uses, so a probe that passes means launches can start. */
const PROBE_ARGS = [
  '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
  '--unshare-pid', '--unshare-net', '--unshare-ipc', '--cap-drop', 'ALL', '--die-with-parent', '--new-session',
  '--', 'true',
];

const probes = new Map<string, Promise<string | undefined>>();

/** The bwrap to use: the configured path, else the first `bwrap` on PATH, else /usr/bin/bwrap. */
export function locateBwrap(configured: string | undefined): string {
  if (configured !== undefined) return configured;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'bwrap');
    if (isExecutableFile(candidate)) return candidate;
  }
  return DEFAULT_BWRAP;
}

/** Why bubblewrap cannot confine a carrier here, or undefined when it can. Cached per path. */
export function bwrapUnavailable(bwrapPath: string): Promise<string | undefined> {
  let probe = probes.get(bwrapPath);
  if (probe === undefined) {
    probe = probeBwrap(bwrapPath);
    probes.set(bwrapPath, probe);
  }
  return probe;
}

/** The permission flag the given Node understands, or why it has none. */
export function permissionFlag(nodeVersion: string): PermissionFlag | { unavailable: string } {
  const [major = 0, minor = 0] = /^v?(\d+)\.(\d+)/.exec(nodeVersion)?.slice(1).map(Number) ?? [];
  // Node 22.13 and 23.5 renamed --experimental-permission; Node 24 no longer accepts the old name.
  if (major >= 24 || (major === 23 && minor >= 5) || (major === 22 && minor >= 13)) return '--permission';
  if (major >= 20) return '--experimental-permission';
  return { unavailable: `Node ${nodeVersion} has no permission model (it needs Node 20 or later)` };
}

/** Whether the given Node's permission model governs the network (`--allow-net`, Node 25 and later; all or nothing). */
export function permissionGovernsNetwork(nodeVersion: string): boolean {
  const major = Number(/^v?(\d+)\./.exec(nodeVersion)?.[1] ?? 0);
  return major >= 25;
}

/** Backend availability for `ptc version`: undefined when usable, else why not. */
export async function availableBackends(options: { bwrapPath?: string; carrierNodeVersion?: string } = {}): Promise<{
  bwrap: string | undefined;
  nodePermission: string | undefined;
}> {
  const flag = permissionFlag(options.carrierNodeVersion ?? process.version);
  return {
    bwrap: await bwrapUnavailable(locateBwrap(options.bwrapPath)),
    nodePermission: typeof flag === 'string' ? undefined : flag.unavailable,
  };
}

async function probeBwrap(bwrapPath: string): Promise<string | undefined> {
  let stats;
  try {
    stats = statSync(bwrapPath);
  } catch {
    return `bubblewrap is not installed (${bwrapPath} not found)`;
  }
  if (!stats.isFile() || !isExecutableFile(bwrapPath)) return `bubblewrap at ${bwrapPath} is not an executable file`;
  return new Promise((resolve) => {
    const child = spawn(bwrapPath, PROBE_ARGS, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      if (stderr.length < STDERR_LIMIT) stderr += text;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve(`bubblewrap at ${bwrapPath} could not be started: ${error.message}`);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(undefined);
      if (signal === 'SIGKILL') return resolve(`bubblewrap at ${bwrapPath} did not finish a test sandbox within ${PROBE_TIMEOUT_MS} ms`);
      const detail = stderr.trim().slice(0, STDERR_LIMIT) || (signal === null ? `exit code ${code}` : `killed by ${signal}`);
      resolve(`bubblewrap at ${bwrapPath} cannot create a sandbox here (user namespaces refused or restricted): ${detail}`);
    });
  });
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
