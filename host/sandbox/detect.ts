// What this machine can enforce. bubblewrap is probed by running a sandbox shaped like a real
// launch; a pass is kept in a per-user cache across processes (probe-cache.ts) and every answer
// for the life of the process. Node's permission model depends only on the carrier Node's version.
// Windows has no bubblewrap: there the answer is known without looking.
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { bwrapProbeArgs, isExecutableFile, locateBwrap as locateOnDisk } from '../../supervision/bwrap-probe.ts';
import { filterStdio, sendFilter } from '../../supervision/seccomp-fd.ts';
import { seccompFilter, seccompUnavailable } from '../../supervision/seccomp.ts';
import { bwrapCommand, privateMountPrefix } from '../../supervision/private-mounts.ts';
import { cachedPass, probeCacheFile, probeKey, recordPass } from './probe-cache.ts';

/** bwrap prints its error and exits at once; a probe this slow means something is wedged. */
const PROBE_TIMEOUT_MS = 10_000;
const STDERR_LIMIT = 2_000;

export type { PermissionFlag } from '../../supervision/node-permission.ts';
import type { PermissionFlag } from '../../supervision/node-permission.ts';

/** Where an answer about bwrap came from: a test sandbox run now, the cache of an earlier one, or no probe at all (missing, or not Linux). */
export type BwrapAnswerSource = 'probe' | 'cache' | 'none';

export interface BwrapStatus {
  /** Why bubblewrap cannot confine a carrier here; undefined when it can. */
  unavailable: string | undefined;
  source: BwrapAnswerSource;
  /** The cache file consulted, when one was. */
  cacheFile?: string;
}

export interface DetectOptions {
  /** @default process.platform */
  platform?: NodeJS.Platform;
  /** @default probeCacheFile() */
  cacheFile?: string;
}

const probes = new Map<string, Promise<BwrapStatus>>();

/** The bwrap to use: the configured path, else one found on PATH or in the usual places (never needing PATH). */
export function locateBwrap(configured: string | undefined): string {
  return locateOnDisk(configured);
}

/** Why bubblewrap cannot confine a carrier here, or undefined when it can. Cached per path. */
export async function bwrapUnavailable(bwrapPath: string, options: DetectOptions = {}): Promise<string | undefined> {
  return (await bwrapStatus(bwrapPath, options)).unavailable;
}

/** bwrapUnavailable with where the answer came from (for `ptc version`). */
export function bwrapStatus(bwrapPath: string, options: DetectOptions = {}): Promise<BwrapStatus> {
  const platform = options.platform ?? process.platform;
  // bubblewrap is built on Linux namespaces; nothing else has them.
  if (platform !== 'linux') return Promise.resolve({ unavailable: `bubblewrap needs Linux; this is ${platform}`, source: 'none' });
  const noFilter = seccompUnavailable();
  if (noFilter !== undefined) return Promise.resolve({ unavailable: noFilter, source: 'none' });
  const memo = `${bwrapPath}\0${options.cacheFile ?? ''}`;
  let probe = probes.get(memo);
  if (probe === undefined) {
    probe = probeOrRecall(bwrapPath, options.cacheFile ?? probeCacheFile());
    probes.set(memo, probe);
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

async function probeOrRecall(bwrapPath: string, cacheFile: string): Promise<BwrapStatus> {
  let stats;
  try {
    stats = statSync(bwrapPath);
  } catch {
    return { unavailable: `bubblewrap is not installed (${bwrapPath} not found)`, source: 'none' };
  }
  if (!stats.isFile() || !isExecutableFile(bwrapPath)) return { unavailable: `bubblewrap at ${bwrapPath} is not an executable file`, source: 'none' };
  // A pass without the private mount namespace says nothing of launches inside one.
  const key = probeKey(bwrapPath, stats, privateMountPrefix()?.executable ?? null);
  if (cachedPass(cacheFile, key)) return { unavailable: undefined, source: 'cache', cacheFile };
  const unavailable = await probeBwrap(bwrapPath);
  // Only a pass is kept: a failure may be passing (namespaces used up, a wedged probe), and a
  // machine without working bwrap loses little by asking again.
  if (unavailable === undefined) recordPass(cacheFile, key);
  return { unavailable, source: 'probe', cacheFile };
}

function probeBwrap(bwrapPath: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const filter = seccompFilter();
    // Through the same private mount namespace as launches (private-mounts.ts), so a pass covers both.
    const { executable, args } = bwrapCommand(bwrapPath, bwrapProbeArgs(bwrapPath), privateMountPrefix());
    const child = spawn(executable, args, { stdio: filterStdio(['ignore', 'ignore', 'pipe'], filter), env: {} });
    sendFilter(child, filter);
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
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
