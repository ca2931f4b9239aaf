// The file and network policy a program runs under, validated and resolved once: relative paths
// against the caller's cwd, then symlinks (realpath), so every rule names the directory the kernel
// will see. Errors name the field and quote the value, as the runtime config does.
// Synchronous on purpose: a few path lookups on every run cost microseconds this way, and a
// fraction of a millisecond through the libuv thread pool, which a retained round trip notices.
import { realpathSync, statSync } from 'node:fs';
import * as nodePath from 'node:path';
import { resolve } from 'node:path';
import { parseNetworkRules, type NetworkRules } from './network/rules.ts';
import { show } from '../../wire/show.ts';
import { DEFAULT_SANDBOX_MODE, SANDBOX_MODES, type SandboxMode } from '../../wire/sandbox-modes.ts';

/** The policy of runs that name none: the cwd is the workspace, writable, with no network. */
export const DEFAULT_POLICY: SandboxPolicy = Object.freeze({ mode: DEFAULT_SANDBOX_MODE });

export interface SandboxPolicy {
  /** read-only: write only the private temp directory; workspace-write: also the workspace and writable roots; full-access: no file rules. */
  mode: SandboxMode;
  /** Whether the program may use the network: all of it, none, or only the destinations an
   * allowlist names (bubblewrap only; reached through the host's proxy). @default false, true for full-access */
  network?: boolean | NetworkRules;
  /** The workspace directory, relative to the caller's cwd. @default the caller's cwd */
  workspaceRoot?: string;
  /** Extra writable directories (workspace-write only); each must exist. @default [] */
  writableRoots?: string[];
}

/** An allowlist as validated: the rules as given, deny always present. */
export interface ResolvedNetworkRules {
  allow: string[];
  deny: string[];
}

export interface ResolvedPolicy {
  mode: SandboxMode;
  network: boolean | ResolvedNetworkRules;
  /** Real path (symlinks resolved). */
  workspaceRoot: string;
  /** Real paths, without duplicates, in the order given. */
  writableRoots: string[];
}

const FIELDS = new Set(['mode', 'network', 'workspaceRoot', 'writableRoots']);
/** Mounted fresh inside a bwrap sandbox, so a host directory there can never be a rule. */
const PRIVATE_MOUNTS = ['/proc', '/dev'];

/** Validates a policy and resolves its paths; throws TypeError/RangeError naming the field. With
 * `elsewhere`, the paths name directories on another machine (a remote launch): they are made
 * absolute here and resolved and checked over there. */
export async function resolvePolicy(input: unknown, cwd: string, { elsewhere = false }: { elsewhere?: boolean } = {}): Promise<ResolvedPolicy> {
  const { policy, mode, network } = checkPolicyShape(input);
  const rawRoots = (policy.writableRoots ?? []) as unknown[];
  // Without a workspaceRoot the run's cwd is the workspace: a missing cwd is named as the caller gave it.
  const rootField = policy.workspaceRoot === undefined ? 'cwd (the default workspaceRoot)' : 'workspaceRoot';
  const workspaceRoot = await resolveRoot(rootField, policy.workspaceRoot ?? cwd, cwd, mode, elsewhere);
  if (!elsewhere && !statSync(workspaceRoot).isDirectory()) {
    throw new RangeError(`ptc sandbox policy: ${rootField} must be a directory, got ${show(policy.workspaceRoot ?? cwd)} (${workspaceRoot})`);
  }
  const writableRoots: string[] = [];
  for (const [index, root] of rawRoots.entries()) {
    const real = await resolveRoot(`writableRoots[${index}]`, root, cwd, mode, elsewhere);
    if (!writableRoots.includes(real)) writableRoots.push(real);
  }
  return { mode: mode as SandboxMode, network, workspaceRoot, writableRoots };
}

/** The checks of a policy that need no file system: its fields, mode, network and the types of
 * its paths. The runtime runs them when it is created and when a request is resolved, so a bad
 * policy throws there rather than at every run; resolvePolicy runs them again. */
export function checkPolicyShape(input: unknown): { policy: Record<string, unknown>; mode: SandboxMode; network: boolean | ResolvedNetworkRules } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TypeError(`ptc sandbox policy must be an object, got ${show(input)}`);
  }
  const policy = input as Record<string, unknown>;
  for (const field of Object.keys(policy)) {
    if (!FIELDS.has(field)) throw new TypeError(`ptc sandbox policy: unknown field "${field}" (value ${show(policy[field])})`);
  }
  const mode = policy.mode;
  if (!SANDBOX_MODES.includes(mode as SandboxMode)) {
    throw new RangeError(`ptc sandbox policy: mode must be one of ${SANDBOX_MODES.map((m) => `"${m}"`).join(', ')}, got ${show(mode)}`);
  }
  const network = resolveNetwork(policy.network ?? mode === 'full-access');
  if (mode === 'full-access' && network !== true) {
    const asked = network === false ? 'network: false' : 'a network allowlist';
    throw new RangeError(`ptc sandbox policy: ${asked} needs a confined mode ("read-only" or "workspace-write"); "full-access" restricts nothing`);
  }
  if (policy.workspaceRoot !== undefined && (typeof policy.workspaceRoot !== 'string' || policy.workspaceRoot === '')) {
    throw new TypeError(`ptc sandbox policy: workspaceRoot must be a non-empty path, got ${show(policy.workspaceRoot)}`);
  }
  const rawRoots = policy.writableRoots ?? [];
  if (!Array.isArray(rawRoots)) throw new TypeError(`ptc sandbox policy: writableRoots must be an array of paths, got ${show(rawRoots)}`);
  for (const [index, root] of rawRoots.entries()) {
    if (typeof root !== 'string' || root === '') throw new TypeError(`ptc sandbox policy: writableRoots[${index}] must be a non-empty path, got ${show(root)}`);
  }
  return { policy, mode: mode as SandboxMode, network };
}

/** The directories a program may write besides its private temp directory (shared with the relay). */
export { writablePaths } from '../../supervision/bwrap.ts';

function resolveNetwork(value: unknown): boolean | ResolvedNetworkRules {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`ptc sandbox policy: network must be a boolean or { allow: [...], deny?: [...] }, got ${show(value)}`);
  }
  // Checked (and thrown with the bad rule quoted) by the proxy's own parser, so the two never disagree.
  try {
    parseNetworkRules(value as NetworkRules);
  } catch (error) {
    throw new TypeError((error as Error).message.replace(/^ptc network rules/, 'ptc sandbox policy: network'), { cause: error });
  }
  const { allow, deny = [] } = value as NetworkRules;
  return { allow: [...allow], deny: [...deny] };
}

/** The allowlist of a resolved policy, or undefined when the network is simply on or off. */
export function networkRules(policy: { network: boolean | ResolvedNetworkRules }): ResolvedNetworkRules | undefined {
  return typeof policy.network === 'object' ? policy.network : undefined;
}

async function resolveRoot(field: string, value: unknown, cwd: string, mode: unknown, elsewhere: boolean): Promise<string> {
  if (typeof value !== 'string' || value === '') throw new TypeError(`ptc sandbox policy: ${field} must be a non-empty path, got ${show(value)}`);
  let real: string;
  try {
    real = elsewhere ? resolve(cwd, value) : realpathSync(resolve(cwd, value));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be resolved (${(error as Error).message})`;
    throw new RangeError(`ptc sandbox policy: ${field} ${show(value)} ${reason}`, { cause: error });
  }
  if (mode === 'workspace-write') {
    if (isFileSystemRoot(real)) throw new RangeError(`ptc sandbox policy: ${field} ${show(value)} would make every path writable; name a directory below it (the workspace is the cwd unless workspaceRoot names one), or use mode "read-only"`);
    const inside = PRIVATE_MOUNTS.find((mount) => real === mount || real.startsWith(`${mount}/`));
    if (inside !== undefined) throw new RangeError(`ptc sandbox policy: ${field} ${show(value)} (${real}) is under ${inside}, which the sandbox replaces`);
  }
  return real;
}

/** True for `/`, and on Windows for a drive or share root (`C:\`, `\\server\share\`): a writable root there grants a whole file system. */
export function isFileSystemRoot(real: string, paths: typeof nodePath.posix = nodePath): boolean {
  return paths.parse(real).root === real;
}

