// Chooses the backend for one resolved policy. Fails closed: when the required enforcement cannot
// be had the answer is `{ unavailable }`, saying what is missing, never a weaker backend.
import { bwrapUnavailable, locateBwrap, permissionFlag, permissionGovernsNetwork, type DetectOptions, type PermissionFlag } from './detect.ts';
import { ENFORCEMENT_RANK, resolveSandboxOptions, type Enforcement, type SandboxOptions } from './options.ts';
import { networkRules, type ResolvedPolicy } from './policy.ts';

/** Why only bubblewrap can enforce a network allowlist (Node 26's permission model has an
 * all-or-nothing --allow-net, and Node 20's has no network rule at all). */
const ALLOWLIST_NEEDS_BWRAP = `a network allowlist needs the "bwrap" backend: Node's permission model can only allow or refuse the whole network, not single hosts`;

export type SandboxPlan =
  | { backend: 'none'; enforcement: 'none'; policy: ResolvedPolicy }
  | { backend: 'bwrap'; enforcement: 'full'; policy: ResolvedPolicy; bwrapPath: string }
  | { backend: 'node-permission'; enforcement: 'partial'; policy: ResolvedPolicy; permissionFlag: PermissionFlag; /** The carrier Node's model refuses the network unless granted (Node 25+). */ governsNetwork: boolean; /** Why auto did not pick bwrap. */ bwrapUnavailable?: string };

/** The reason for a `sandbox-unavailable` failure. */
export interface SandboxUnavailable {
  unavailable: string;
}

/** What another machine offers, for a carrier that runs there (a remote launch probes it). */
export interface MachineFacts {
  bwrapPath: string;
  bwrapUnavailable: string | undefined;
}

/** Picks the backend that confines `policy` with at least the required enforcement, on this machine
 * or the one `facts` describe. `detect` overrides what is known of this machine (its platform: on
 * Windows, only node-permission). */
export async function planSandbox(policy: ResolvedPolicy, input: SandboxOptions = {}, facts?: MachineFacts, detect: DetectOptions = {}): Promise<SandboxPlan | SandboxUnavailable> {
  const options = resolveSandboxOptions(input);
  // full-access has nothing to enforce, so no requirement can go unmet.
  if (policy.mode === 'full-access') return { backend: 'none', enforcement: 'none', policy };
  const { backend, require } = options;

  if (backend === 'none') {
    // require "none" accepts an unconfined run, allowlist or not: the report says network: true.
    if (require === 'none') return { backend: 'none', enforcement: 'none', policy };
    return { unavailable: `sandbox backend "none" enforces nothing, but mode "${policy.mode}" requires ${require} enforcement (set require: "none" to run unconfined)` };
  }
  let bwrapReason: string | undefined;
  if (backend === 'bwrap' || backend === 'auto') {
    const bwrapPath = facts?.bwrapPath ?? locateBwrap(options.bwrapPath);
    bwrapReason = facts !== undefined ? facts.bwrapUnavailable : await bwrapUnavailable(bwrapPath, detect);
    if (bwrapReason === undefined) return { backend: 'bwrap', enforcement: 'full', policy, bwrapPath };
    if (backend === 'bwrap') return { unavailable: bwrapReason };
  }
  // Fail closed: running it under node-permission would let the program reach every host.
  if (networkRules(policy) !== undefined) return { unavailable: [bwrapReason, ALLOWLIST_NEEDS_BWRAP].filter((reason) => reason !== undefined).join('; ') };
  const flag = permissionFlag(options.carrierNodeVersion);
  const why = [bwrapReason, typeof flag === 'string' ? undefined : flag.unavailable].filter((reason) => reason !== undefined);
  if (!satisfies('partial', require)) {
    why.push(`Node's permission model (backend "node-permission") enforces file rules (and on Node 25 or later network: all or nothing), not process isolation, and require is "full"`);
    return { unavailable: why.join('; ') };
  }
  if (typeof flag !== 'string') return { unavailable: why.join('; ') };
  const governsNetwork = permissionGovernsNetwork(options.carrierNodeVersion);
  // auto must not trade a closed network for an open one behind the caller's back; naming the
  // backend (or require "none") accepts it, and the report then says network: true.
  if (backend === 'auto' && !governsNetwork && policy.network === false && require !== 'none') {
    why.push(networkNotHeld(options.carrierNodeVersion));
    return { unavailable: why.join('; ') };
  }
  const plan: SandboxPlan = { backend: 'node-permission', enforcement: 'partial', policy, permissionFlag: flag, governsNetwork };
  if (bwrapReason !== undefined) plan.bwrapUnavailable = bwrapReason;
  return plan;
}

/** Why auto does not fall back to node-permission for a policy without network on this Node. */
export function networkNotHeld(nodeVersion: string): string {
  return `the permission model of Node ${nodeVersion} (backend "node-permission") cannot refuse the network (Node 25 or later can), and the policy has network: false; set backend "node-permission" to run there with the network open (the report then says network: true)`;
}

function satisfies(given: Enforcement, required: Enforcement): boolean {
  return ENFORCEMENT_RANK[given] >= ENFORCEMENT_RANK[required];
}
