// Turns a carrier launch into the confined one for a plan: bwrap in front of the command, or
// Node's permission flags in its argv or NODE_OPTIONS. Each confined carrier gets a private temp
// directory (TMPDIR, TMP, TEMP) that cleanup() removes once the carrier has exited.
import { mkdtempSync, realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { LaunchCommand } from './command.ts';
import { bwrapArgs, within } from './bwrap.ts';
import { appendNodeOptions, permissionArgs, readableRoots } from './node-permission.ts';
import type { Enforcement, SandboxBackend } from './options.ts';
import type { SandboxPlan } from './plan.ts';
import { writablePaths, type SandboxMode } from './policy.ts';

/** What a result reports about the confinement it ran under. */
export interface SandboxSetup {
  mode: SandboxMode;
  backend: SandboxBackend;
  enforcement: Enforcement;
  /** Whether the program can reach the network: node-permission takes it away only on Node 25 and later. */
  network: boolean;
  /** Present for a remote launch: the far side enforced this, with its own bubblewrap or Node. */
  location?: 'remote';
}

export interface WrappedLaunch {
  command: LaunchCommand;
  report: SandboxSetup;
  /** The carrier's private temp directory, when confined. */
  privateTmp: string | undefined;
  /** Removes the private temp directory; call after the carrier has exited. Idempotent. */
  cleanup(): Promise<void>;
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
  const report: SandboxSetup = {
    mode: policy.mode,
    backend: plan.backend,
    enforcement: plan.enforcement,
    network: plan.backend === 'bwrap' || (plan.backend === 'node-permission' && plan.networkRule) ? policy.network : true,
  };
  if (plan.backend === 'none') return { command, report, privateTmp: undefined, cleanup: async () => {} };

  // Resolved first: a missing cwd throws before anything is created.
  const cwd = options.cwd === undefined ? undefined : realpathSync(options.cwd);
  const privateTmp = mkdtempSync(join(realpathSync(options.tmpdir ?? tmpdir()), 'ptc-sandbox-'));
  const env = { ...command.env };
  for (const name of TEMP_VARIABLES) env[name] = privateTmp;
  const cleanup = () => rm(privateTmp, { recursive: true, force: true });
  const writable = [...writablePaths(policy), privateTmp];

  if (plan.backend === 'node-permission') {
    const flags = permissionArgs(plan.permissionFlag, writable, readableRoots(), plan.networkRule && policy.network);
    // A single-executable app reads its argv as its own; Node options reach it only through NODE_OPTIONS.
    const wrapped: LaunchCommand = command.kind === 'embedded'
      ? { ...command, env: { ...env, NODE_OPTIONS: appendNodeOptions(env.NODE_OPTIONS, flags) } }
      : { ...command, args: [...flags, ...command.args], env };
    return { command: wrapped, report, privateTmp, cleanup };
  }

  const launch = exposeLaunchPaths(command);
  const args = [...bwrapArgs(policy, { privateTmp, launchPaths: launch.paths, cwd }), '--', launch.executable, ...launch.args];
  return { command: { ...command, executable: plan.bwrapPath, args, env }, report, privateTmp, cleanup };
}

/**
 * The files the launch runs, as real paths, and argv rewritten to use them where they sit under
 * /tmp: the sandbox's /tmp is private, so they are bound back read-only at their real location.
 */
function exposeLaunchPaths(command: LaunchCommand): { executable: string; args: string[]; paths: string[] } {
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
    return within(path, '/tmp') ? real : path;
  };
  const executable = expose(command.executable);
  const args = command.args.map(expose);
  for (const path of command.readable ?? []) expose(path);
  // Node's compile cache is read through, never written: a confined program must not be able to
  // plant compiled code that later, unconfined carriers would run.
  const cache = command.env.NODE_COMPILE_CACHE;
  if (cache !== undefined) expose(cache);
  return { executable, args, paths };
}
