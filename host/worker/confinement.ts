// From a run's policy to the carrier that enforces it: resolve the policy, choose the backend
// (failing closed with sandbox-unavailable), and describe the carrier as a recipe whose key names
// everything that shapes it, so a spare booted for one run can serve the next identical one.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { launchCommand, type LaunchCommand, type LaunchConfig } from './launch.ts';
import { planSandbox, resolvePolicy, wrapLaunch, type ResolvedPolicy, type SandboxOptions, type SandboxPolicy, type SandboxSetup } from '../sandbox/index.ts';

/** The configuration that shapes a carrier. */
export interface CarrierSettings {
  launch: LaunchConfig | undefined;
  maxOldGenerationSizeMb: number;
  maxMessageBytes: number;
  sandbox: Omit<SandboxOptions, 'carrierNodeVersion'>;
}
import { Carrier } from './carrier.ts';
import { openLocalConnection } from './transports/local.ts';

export interface CarrierRecipe {
  /** Everything that shapes the carrier: launch, limits, backend and policy. */
  readonly key: string;
  readonly policy: ResolvedPolicy;
  readonly report: SandboxSetup;
  /** Starts a carrier; its private temp directory is removed when it is terminated. */
  create(): Carrier;
}

export type Confinement = { recipe: CarrierRecipe } | { unavailable: string; report: SandboxSetup };

/** The default policy: the cwd is the workspace, writable, with no network. */
export const DEFAULT_POLICY: SandboxPolicy = { mode: 'workspace-write' };

const nodeVersions = new Map<string, string>();

/** Resolves `policy` for a run in `cwd` and plans its confinement. Policy errors throw (caller misuse). */
export async function confine(config: CarrierSettings, policy: SandboxPolicy, cwd: string): Promise<Confinement> {
  const resolved = await resolvePolicy(policy, cwd);
  const base = launchCommand(config.launch, config.maxOldGenerationSizeMb);
  const plan = await planSandbox(resolved, { ...config.sandbox, carrierNodeVersion: carrierNodeVersion(base) });
  if ('unavailable' in plan) {
    return { unavailable: plan.unavailable, report: { mode: resolved.mode, backend: 'none', enforcement: 'none', network: resolved.network } };
  }
  const key = JSON.stringify([base.executable, base.args, base.env, config.maxMessageBytes, plan.backend, resolved]);
  return {
    recipe: {
      key,
      policy: resolved,
      // As wrapLaunch reports it: only bwrap can take the network away.
      report: { mode: resolved.mode, backend: plan.backend, enforcement: plan.enforcement, network: plan.backend === 'bwrap' ? resolved.network : true },
      create() {
        const wrapped = wrapLaunch(base, plan, { cwd: resolved.workspaceRoot });
        const { privateTmp } = wrapped;
        return new Carrier({
          connection: openLocalConnection(wrapped.command, resolved.workspaceRoot),
          maxMessageBytes: config.maxMessageBytes,
          cleanup: wrapped.cleanup,
          ...(privateTmp !== undefined ? { cleanupSync: () => rmSync(privateTmp, { recursive: true, force: true }) } : {}),
        });
      },
    },
  };
}

// The permission flag's name depends on the Node that runs the carrier (20 vs 24), which for a
// node-script launch is not this one. Asked once per executable.
function carrierNodeVersion(command: LaunchCommand): string {
  if (command.kind !== 'node-script') return process.version;
  let version = nodeVersions.get(command.executable);
  if (version === undefined) {
    try {
      version = execFileSync(command.executable, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
    } catch {
      version = process.version;
    }
    nodeVersions.set(command.executable, version);
  }
  return version;
}
