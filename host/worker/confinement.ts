// From a run's policy to the carrier that enforces it: resolve the policy, choose the backend
// (failing closed with sandbox-unavailable), and describe the carrier as a recipe whose key names
// everything that shapes it, so a spare booted for one run can serve the next identical one.
// A remote launch plans with what the far side reported and lets its relay apply the plan there.
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import type { RelayStart, RelaySandbox } from '../../wire/mux.ts';
import { importFiles, type ImportPolicy } from '../../wire/import-policy.ts';
import { writablePaths } from '../../supervision/bwrap.ts';
import { isRemoteLaunch, launchCommand, type LaunchCommand, type LaunchConfig, type RemoteLaunch } from './launch.ts';
import {
  emptyNetworkReport, networkRules, openAllowlist, planSandbox, resolvePolicy, setupReport, wrapLaunch, type ResolvedPolicy, type SandboxOptions, type SandboxPlan, type SandboxPolicy, type SandboxSetup,
} from '../sandbox/index.ts';
import { Carrier } from './carrier.ts';
import { openLocalConnection } from './transports/local.ts';
import { openRelayedConnection, RELAY_WATCHDOG_MS } from './transports/relayed.ts';
import { commandTarget } from './transports/command.ts';
import { sshTarget } from './transports/ssh.ts';
import type { RemoteTarget } from './transports/remote.ts';

/** The configuration that shapes a carrier. */
export interface CarrierSettings {
  launch: LaunchConfig | undefined;
  maxOldGenerationSizeMb: number;
  maxMessageBytes: number;
  /** Watched on the far side for a remote carrier (the relay); null for none. */
  maxDiskMb: number | null;
  sandbox: Omit<SandboxOptions, 'carrierNodeVersion'>;
  /** The import policy: the files it maps are made readable inside the sandbox. */
  imports?: ImportPolicy;
  /** The memory limit of a carrier's tree; a remote carrier's relay enforces it from the start frame. */
  maxMemoryMb?: number | null;
}

export interface CarrierRecipe {
  /** Everything that shapes the carrier: launch, limits, backend and policy. */
  readonly key: string;
  readonly policy: ResolvedPolicy;
  readonly report: SandboxSetup;
  /** Starts a carrier; its private temp directory is removed when it is terminated. */
  create(): Carrier;
}

export type Confinement = { recipe: CarrierRecipe } | { unavailable: string; report: SandboxSetup };

const nodeVersions = new Map<string, string>();

/** Resolves `policy` for a run in `cwd` and plans its confinement. Policy errors throw (caller misuse). */
export async function confine(config: CarrierSettings, policy: SandboxPolicy, cwd: string): Promise<Confinement> {
  if (isRemoteLaunch(config.launch)) return confineRemote(config, config.launch, policy, cwd);
  const resolved = await resolvePolicy(policy, cwd);
  const base = launchCommand(config.launch, config.maxOldGenerationSizeMb, importFiles(config.imports));
  const plan = await planSandbox(resolved, { ...config.sandbox, carrierNodeVersion: carrierNodeVersion(base) });
  if ('unavailable' in plan) return { unavailable: plan.unavailable, report: unconfinedReport(resolved) };
  // The files an import policy maps are bound into the sandbox: a carrier without them is another shape.
  const key = JSON.stringify([base.executable, base.args, base.env, base.readable, config.maxMessageBytes, plan.backend, resolved]);
  return {
    recipe: {
      key,
      policy: resolved,
      report: setupReport(plan),
      create() {
        // Each carrier gets its own allowlist proxy (wrapLaunch starts it), stopped by cleanup.
        const wrapped = wrapLaunch(base, plan, { cwd: resolved.workspaceRoot });
        return new Carrier({
          connection: openLocalConnection(wrapped.command, resolved.workspaceRoot),
          maxMessageBytes: config.maxMessageBytes,
          cleanup: wrapped.cleanup,
          signalAsExitCode: plan.backend === 'bwrap',
          writable: [...writablePaths(resolved), ...(wrapped.privateTmp === undefined ? [] : [wrapped.privateTmp])],
          ...(wrapped.privateTmp !== undefined ? { cleanupSync: wrapped.cleanupSync } : {}),
          ...(wrapped.network !== undefined ? { network: wrapped.network } : {}),
        });
      },
    },
  };
}

// One target (and so one SSH master connection) per distinct remote launch, shared by the
// runtimes that use it. When the last of them is disposed the connection lingers briefly, so a
// caller that makes a runtime per run (as the CLI and many harnesses do) does not pay a handshake
// each time; the timer is unref'd and a host that exits closes it at once (transports/ssh.ts).
const LINGER_MS = 5_000;
interface SharedTarget {
  target: RemoteTarget;
  id: number;
  users: Set<CarrierSettings>;
  linger: NodeJS.Timeout | undefined;
}
const targets = new Map<string, SharedTarget>();
let nextTargetId = 0;

function targetFor(config: CarrierSettings, launch: RemoteLaunch): SharedTarget {
  const key = JSON.stringify(launch);
  let entry = targets.get(key);
  if (entry === undefined) {
    entry = { target: launch.kind === 'ssh' ? sshTarget(launch) : commandTarget(launch), id: nextTargetId++, users: new Set(), linger: undefined };
    targets.set(key, entry);
  }
  clearTimeout(entry.linger);
  entry.linger = undefined;
  entry.users.add(config);
  return entry;
}

/** Lets go of the remote connection a runtime's configuration used, if any (at dispose). */
export async function releaseRemote(config: CarrierSettings): Promise<void> {
  if (!isRemoteLaunch(config.launch)) return;
  const key = JSON.stringify(config.launch);
  const entry = targets.get(key);
  if (entry === undefined || !entry.users.delete(config) || entry.users.size > 0) return;
  clearTimeout(entry.linger);
  entry.linger = setTimeout(() => {
    if (targets.get(key) === entry && entry.users.size === 0) {
      targets.delete(key);
      void entry.target.close();
    }
  }, LINGER_MS);
  entry.linger.unref();
}

async function confineRemote(config: CarrierSettings, launch: RemoteLaunch, policy: SandboxPolicy, cwd: string): Promise<Confinement> {
  // The paths name directories over there: checked for shape here, resolved by the relay.
  const resolved = await resolvePolicy(policy, cwd, { elsewhere: true });
  const { target, id } = targetFor(config, launch);
  const unconfined: SandboxSetup = { ...unconfinedReport(resolved), location: 'remote' };
  const rules = networkRules(resolved);
  let facts;
  try {
    facts = await target.prepare(config.sandbox.bwrapPath);
  } catch (error) {
    // Connection and set-up problems (host unreachable, authentication, no Node there) are the
    // run's worker-exit failure, with the message that names the remote problem.
    const message = (error as Error).message;
    return { recipe: { key: JSON.stringify(['remote-failed', id, message]), policy: resolved, report: unconfined, create: () => failedCarrier(config, message) } };
  }
  const plan = await planSandbox(resolved, { ...config.sandbox, carrierNodeVersion: facts.node }, facts);
  if ('unavailable' in plan) return { unavailable: `on the far side (${target.describe}): ${plan.unavailable}`, report: unconfined };
  const start: RelayStart = { heapMb: config.maxOldGenerationSizeMb, cwd: resolved.workspaceRoot, sandbox: relaySandbox(plan), watchdogMs: RELAY_WATCHDOG_MS, maxMemoryMb: config.maxMemoryMb ?? null, maxDiskMb: config.maxDiskMb };
  return {
    recipe: {
      key: JSON.stringify(['remote', id, config.maxMessageBytes, start]),
      policy: resolved,
      report: { ...setupReport(plan), location: 'remote' },
      create() {
        // An allowlist's proxy runs here, one per carrier as locally; the relay carries the far
        // sandbox's connections to it, so they leave from this host.
        const allowlist = rules === undefined ? undefined : openAllowlist(rules, tmpdir());
        const connection = openRelayedConnection(target.relay(start), allowlist === undefined ? {} : { connectProxy: () => allowlist.connect() });
        // A relay that did not start (the cache changed, the connection went): check again next time.
        connection.onStartFailure(() => target.forget());
        return new Carrier({
          connection,
          maxMessageBytes: config.maxMessageBytes,
          signalAsExitCode: plan.backend === 'bwrap',
          ...(allowlist === undefined ? {} : { network: allowlist.session, cleanup: () => allowlist.close(), cleanupSync: () => allowlist.closeSync() }),
        });
      },
    },
  };
}

/** The report of a run that never got a carrier. */
function unconfinedReport(policy: ResolvedPolicy): SandboxSetup {
  return { mode: policy.mode, backend: 'none', enforcement: 'none', network: typeof policy.network === 'object' ? emptyNetworkReport() : policy.network };
}

function relaySandbox(plan: SandboxPlan): RelaySandbox {
  const { policy } = plan;
  if (plan.backend === 'none' || policy.mode === 'full-access') return { backend: 'none' };
  if (plan.backend === 'bwrap') {
    return {
      backend: 'bwrap', bwrapPath: plan.bwrapPath, mode: policy.mode, network: policy.network === true, workspaceRoot: policy.workspaceRoot, writableRoots: policy.writableRoots,
      ...(typeof policy.network === 'object' ? { allowlist: true } : {}),
    };
  }
  return { backend: 'node-permission', permissionFlag: plan.permissionFlag, ...(plan.governsNetwork && policy.network === true ? { allowNet: true } : {}), mode: policy.mode, workspaceRoot: policy.workspaceRoot, writableRoots: policy.writableRoots };
}

function failedCarrier(config: CarrierSettings, message: string): Carrier {
  return new Carrier({ connection: openRelayedConnection(Promise.reject(new Error(message))), maxMessageBytes: config.maxMessageBytes });
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
