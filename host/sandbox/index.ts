// The sandbox layer: policy -> plan (backend) -> wrapped launch and report.
export { checkPolicyShape, networkRules, resolvePolicy, writablePaths, DEFAULT_POLICY, type SandboxPolicy, type ResolvedPolicy, type ResolvedNetworkRules } from './policy.ts';
export { SANDBOX_MODES, type SandboxMode } from '../../wire/sandbox-modes.ts';
export { resolveSandboxOptions, type BackendChoice, type Enforcement, type ResolvedSandboxOptions, type SandboxBackend, type SandboxOptions } from './options.ts';
export { availableBackends, bwrapStatus, bwrapUnavailable, locateBwrap, permissionFlag, type BwrapStatus, type DetectOptions, type PermissionFlag } from './detect.ts';
export { probeCacheFile } from './probe-cache.ts';
export { cacheDirectory, isPrivateDirectory, makePrivateDirectory } from './private-directory.ts';
export { planSandbox, type MachineFacts, type SandboxPlan, type SandboxUnavailable } from './plan.ts';
export { bwrapArgs, type BwrapLayout } from '../../supervision/bwrap.ts';
export { appendNodeOptions, permissionArgs, readableRoots } from '../../supervision/node-permission.ts';
export { setupReport, wrapLaunch, type SandboxSetup, type WrapOptions, type WrappedLaunch } from './wrap.ts';
export { isDenial } from './denial.ts';
export { sweepLeftovers } from './leftovers.ts';
export type { LaunchCommand } from './command.ts';
export { emptyNetworkReport, openAllowlist, type Allowlist, type NetworkSession } from './allowlist.ts';
export type { NetworkRules } from './network/rules.ts';
export type { NetworkReport } from './network/proxy.ts';
