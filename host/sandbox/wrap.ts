// Turns a carrier launch into the confined one for a plan: bwrap in front of the command, or
// Node's permission flags in its argv or NODE_OPTIONS. Each confined carrier gets a private temp
// directory (TMPDIR, TMP, TEMP) in this host's directory (supervision/host-temp.ts) that
// cleanup() removes once the carrier has exited; the shared temp directories around it are hidden
// from the program under both backends, so one run cannot read another's files there. Under a
// network allowlist bwrap still unshares the network; the carrier gets the proxy's socket bound in
// and the variables that route fetch, http/https and child processes through it (allowlist.ts).
import { realpathSync } from 'node:fs';
import { NETWORK_SOCKET_ENV, proxyEnvironment } from '../../wire/network.ts';
import { tmpdir } from 'node:os';
import { isAbsolute } from 'node:path';
import type { LaunchCommand } from './command.ts';
import { emptyNetworkReport, openAllowlist, type NetworkSession } from './allowlist.ts';
import type { NetworkReport } from './network/proxy.ts';
import { confinedCommand } from '../../supervision/launch.ts';
import { removeTree, removeTreeSync } from '../../supervision/remove-tree.ts';
import { seccompFilter, seccompUnavailable } from '../../supervision/seccomp.ts';
import { privateDirectory, sharedTempPaths } from '../../supervision/host-temp.ts';
import { journalKeyDirectory } from './private-directory.ts';
import { appendNodeOptions, permissionArgs, readableRoots } from '../../supervision/node-permission.ts';
import type { Enforcement, SandboxBackend } from './options.ts';
import type { SandboxPlan } from './plan.ts';
import { networkRules, writablePaths } from './policy.ts';
import type { SandboxMode } from '../../wire/sandbox-modes.ts';

/** What a result reports about the confinement it ran under. */
export interface SandboxSetup {
  mode: SandboxMode;
  backend: SandboxBackend;
  enforcement: Enforcement;
  /** Whether the program can reach the network (node-permission cannot take it away), or under an
   * allowlist what it reached and was refused. */
  network: boolean | NetworkReport;
  /** Present for a remote launch: the far side enforced this, with its own bubblewrap or Node. */
  location?: 'remote';
}

export interface WrappedLaunch {
  command: LaunchCommand;
  report: SandboxSetup;
  /** The carrier's private temp directory, when confined. */
  privateTmp: string | undefined;
  /** The carrier's allowlist proxy, when its policy has one. */
  network?: NetworkSession;
  /** Removes the private temp directory (and stops the proxy); call after the carrier has exited. Idempotent. */
  cleanup(): Promise<void>;
  /** The same for a host that is exiting: removes the directories at once. */
  cleanupSync(): void;
}

export interface WrapOptions {
  /** The carrier's working directory (bwrap enters it with --chdir, binding it back if /tmp hides it). */
  cwd?: string;
  /** Where private temp directories are made. @default os.tmpdir() */
  tmpdir?: string;
}

const TEMP_VARIABLES = ['TMPDIR', 'TMP', 'TEMP'];

/** The launch that runs `command` under `plan`, its report, and the cleanup of what it created. */
export function wrapLaunch(command: LaunchCommand, plan: SandboxPlan, options: WrapOptions = {}): WrappedLaunch {
  const { policy } = plan;
  const report = setupReport(plan);
  if (plan.backend === 'none') return { command, report, privateTmp: undefined, cleanup: async () => {}, cleanupSync: () => {} };

  // Resolved first: a missing cwd throws before anything is created.
  const cwd = options.cwd === undefined ? undefined : realpathSync(options.cwd);
  // The plan never picks bwrap where there is no filter (detect.ts); checked before anything is made.
  const filter = plan.backend === 'bwrap' ? seccompFilter() : undefined;
  if (plan.backend === 'bwrap' && filter === undefined) throw new Error(seccompUnavailable());
  const base = options.tmpdir ?? tmpdir();
  const privateTmp = privateDirectory('tmp', base);
  // The journals' keys are hidden like the shared temp space: a program that could read one could
  // sign a forged row (host/execution/journal/key.ts).
  const shared = [...sharedTempPaths(base), ...realPathIfAny(journalKeyDirectory())];
  const env = { ...command.env };
  for (const name of TEMP_VARIABLES) env[name] = privateTmp;
  const removeTmp = () => removeTree(privateTmp);
  const removeTmpSync = () => removeTreeSync(privateTmp);
  const writable = [...writablePaths(policy), privateTmp];

  if (plan.backend === 'node-permission') {
    const exposed = [...writable, policy.workspaceRoot, ...(cwd === undefined ? [] : [cwd]), ...exposeLaunchPaths(command, []).paths];
    const flags = permissionArgs(plan.permissionFlag, writable, readableRoots({ hidden: shared, exposed }), { allowNet: plan.governsNetwork && policy.network === true });
    // A single-executable app reads its argv as its own; Node options reach it only through NODE_OPTIONS.
    const wrapped: LaunchCommand = command.kind === 'embedded'
      ? { ...command, env: { ...env, NODE_OPTIONS: appendNodeOptions(env.NODE_OPTIONS, flags) } }
      : { ...command, args: [...flags, ...command.args], env };
    return { command: wrapped, report, privateTmp, cleanup: removeTmp, cleanupSync: removeTmpSync };
  }

  const rules = networkRules(policy);
  const allowlist = rules === undefined ? undefined : openAllowlist(rules, base);
  if (allowlist !== undefined) Object.assign(env, proxyEnvironment(), { [NETWORK_SOCKET_ENV]: allowlist.sandboxSocketPath });
  const launch = exposeLaunchPaths(command, []);
  // An allowlist gets its own network namespace and no /run sockets: the proxy is the only way
  // out, its directory at a short path in the sandbox's own /run (allowlist.ts). The same build as the relay's.
  const { executable, args } = confinedCommand(plan.bwrapPath, policy, { privateTmp, sharedTemp: shared, launchPaths: launch.paths, cwd, networkDirectory: allowlist?.directory }, [launch.executable, ...launch.args]);
  const wrapped: WrappedLaunch = {
    command: { ...command, executable, args, env, seccompFilter: filter },
    report,
    privateTmp,
    cleanup: async () => {
      await Promise.all([removeTmp(), allowlist?.close()]);
    },
    cleanupSync: () => {
      removeTmpSync();
      allowlist?.closeSync();
    },
  };
  if (allowlist !== undefined) wrapped.network = allowlist.session;
  return wrapped;
}

/** What a run under `plan` reports before it runs: bwrap takes the network away, and so does the
 * permission model of Node 25 and later (all or nothing); an allowlist reports its destinations (none yet). */
export function setupReport(plan: SandboxPlan): SandboxSetup {
  const { policy } = plan;
  const network = plan.backend === 'bwrap'
    ? typeof policy.network === 'object' ? emptyNetworkReport() : policy.network
    : plan.backend === 'node-permission' && plan.governsNetwork ? policy.network === true : true;
  return { mode: policy.mode, backend: plan.backend, enforcement: plan.enforcement, network };
}

/**
 * The files the launch runs, as real paths, and argv rewritten to use them: the sandbox's root
 * holds only what is bound into it, and they are bound read-only at their real location.
 */
function exposeLaunchPaths(command: LaunchCommand, extra: string[]): { executable: string; args: string[]; paths: string[] } {
  const paths: string[] = [];
  const expose = (path: string): string => {
    if (!isAbsolute(path)) return path;
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      return path;
    }
    paths.push(real);
    return real;
  };
  const executable = expose(command.executable);
  const args = command.args.map(expose);
  for (const path of [...(command.readable ?? []), ...extra]) expose(path);
  // Node's compile cache is read through, never written: a confined program must not be able to
  // plant compiled code that later, unconfined carriers would run.
  const cache = command.env.NODE_COMPILE_CACHE;
  if (cache !== undefined) expose(cache);
  return { executable, args, paths };
}

/** The real path (the directory the kernel sees, to hide) as a one-element list, or none when it does not exist. */
function realPathIfAny(path: string): string[] {
  try {
    return [realpathSync(path)];
  } catch {
    return [];
  }
}
