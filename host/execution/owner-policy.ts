// A retained owner's sandbox is fixed while its environment lives. The reference: "A retained
// owner cannot change mode, workspace root, or Session identity until its environment is
// released. Additional writable directories are fixed when the process starts: later grants and
// revocations apply only after release and recreation." Its cwd may move from run to run. So a
// later run whose policy names no workspaceRoot keeps the environment's root (the first run's
// cwd, or the root it named) rather than making its own cwd the root, and a run that would change
// the policy is refused, naming the change, unless the caller asks for the environment to be
// replaced (onPolicyChange: 'replace').
import { realpathSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { within } from '../../supervision/bwrap.ts';
import type { ResolvedPolicy, SandboxPolicy } from '../sandbox/index.ts';
import { show } from '../../wire/show.ts';

/** What a retained run does when its policy differs from its environment's: throw, or end the environment and start one under the new policy. */
export type PolicyChange = 'refuse' | 'replace';

export const POLICY_CHANGES: readonly PolicyChange[] = ['refuse', 'replace'];

const HOW_TO_RELEASE = 'await runtime.release(owner) before this run to start a new environment under it, pass onPolicyChange: "replace" to have this run end the environment (and its variables) and start a new one, or run it with oneTime: true in a separate environment';

/**
 * The policy a later run of an owner runs under. One that names a workspaceRoot stays as it is.
 * One that names none keeps the environment's root when the run's cwd lies inside it (or the
 * mode is full-access); a cwd outside it is refused (or, with 'replace', becomes the new root, as for a fresh owner).
 */
export function ownerPolicy(policy: SandboxPolicy, cwd: string, root: string, choice: PolicyChange, { elsewhere }: { elsewhere: boolean }): SandboxPolicy {
  if (policy.workspaceRoot !== undefined) return policy;
  // full-access has no file rules, so its root shapes nothing and any cwd keeps the environment.
  if (policy.mode === 'full-access' || within(realCwd(cwd, elsewhere), root)) return { ...policy, workspaceRoot: root };
  if (choice === 'replace') return policy;
  throw new Error(
    `ptc run(): cwd ${show(cwd)} is outside this stateOwner's workspace root ${show(root)} (the one its environment started with, which a policy without a workspaceRoot keeps), ` +
      `and a retained owner cannot change its workspace root until it is released: ${HOW_TO_RELEASE}. ` +
      'To move between directories, give the owner\'s runs a policy.workspaceRoot that holds all of them',
  );
}

/** The fields in which `after` differs from `before`, each as `field before → after`; empty when the policy is the same. */
export function policyDifferences(before: ResolvedPolicy, after: ResolvedPolicy): string[] {
  const changed: string[] = [];
  for (const field of ['mode', 'workspaceRoot', 'writableRoots', 'network'] as const) {
    if (JSON.stringify(before[field]) !== JSON.stringify(after[field])) changed.push(`${field} ${show(before[field])} → ${show(after[field])}`);
  }
  return changed;
}

/** The error of a run refused because it would change its owner's policy. */
export function policyChangeRefused(changes: string[]): Error {
  return new Error(
    `ptc run(): this run's sandbox policy differs from the one this stateOwner's environment started with (${changes.join('; ')}), ` +
      `and a retained owner keeps its mode, workspace root, writable roots and network until it is released: ${HOW_TO_RELEASE}`,
  );
}

/** The reason a replaced environment's next result reports. */
export function policyChangeReplaced(changes: string[]): string {
  return `the sandbox policy changed (${changes.join('; ')}), so the previous environment was ended (onPolicyChange: "replace")`;
}

// The root is a real path (policy.ts resolves it through symlinks), so the cwd is compared as one.
// A cwd that does not exist is compared as given: the run then fails on it in the carrier.
function realCwd(cwd: string, elsewhere: boolean): string {
  const absolute = resolvePath(cwd);
  if (elsewhere) return absolute;
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

