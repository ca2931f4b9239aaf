// How confinement is obtained: which backend, how much enforcement the caller insists on, and
// where bubblewrap lives. Validated like the runtime config: unknown fields and bad values throw.
import { show } from '../../wire/show.ts';

export type SandboxBackend = 'bwrap' | 'node-permission' | 'none';
export type BackendChoice = 'auto' | SandboxBackend;
/** full: files, network and processes (bwrap); partial: files, and the whole network on Node 25+ (Node's permission model); none. */
export type Enforcement = 'full' | 'partial' | 'none';

export interface SandboxOptions {
  /** auto: bwrap where it works, else node-permission. @default 'auto' */
  backend?: BackendChoice;
  /** The least enforcement a confined run accepts; less is a `sandbox-unavailable` failure. @default 'partial' */
  require?: Enforcement;
  /** The bubblewrap executable. @default the first `bwrap` in PATH's absolute entries, else the first of the usual install places that exists (supervision/bwrap-probe.ts) */
  bwrapPath?: string;
  /** Version of the Node that runs the carrier (`node --version`), for the permission flag's name. @default process.version */
  carrierNodeVersion?: string;
}

export interface ResolvedSandboxOptions {
  backend: BackendChoice;
  require: Enforcement;
  bwrapPath: string | undefined;
  carrierNodeVersion: string;
}

const BACKENDS: readonly BackendChoice[] = ['auto', 'bwrap', 'node-permission', 'none'];
const ENFORCEMENTS: readonly Enforcement[] = ['full', 'partial', 'none'];
const FIELDS = new Set(['backend', 'require', 'bwrapPath', 'carrierNodeVersion']);

/** Ranks enforcement levels so `require` can be compared with what a backend gives. */
export const ENFORCEMENT_RANK: Record<Enforcement, number> = { none: 0, partial: 1, full: 2 };

/** Validates sandbox options and fills defaults; throws TypeError/RangeError naming the field. */
export function resolveSandboxOptions(input: unknown = {}): ResolvedSandboxOptions {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TypeError(`ptc sandbox options must be an object, got ${show(input)}`);
  }
  const options = input as Record<string, unknown>;
  for (const field of Object.keys(options)) {
    if (!FIELDS.has(field)) throw new TypeError(`ptc sandbox options: unknown field "${field}" (value ${show(options[field])})`);
  }
  const backend = options.backend ?? 'auto';
  if (!BACKENDS.includes(backend as BackendChoice)) throw new RangeError(`ptc sandbox options: backend must be one of ${list(BACKENDS)}, got ${show(backend)}`);
  const require = options.require ?? 'partial';
  if (!ENFORCEMENTS.includes(require as Enforcement)) throw new RangeError(`ptc sandbox options: require must be one of ${list(ENFORCEMENTS)}, got ${show(require)}`);
  const { bwrapPath, carrierNodeVersion = process.version } = options;
  if (bwrapPath !== undefined && (typeof bwrapPath !== 'string' || bwrapPath === '')) {
    throw new TypeError(`ptc sandbox options: bwrapPath must be a non-empty path, got ${show(bwrapPath)}`);
  }
  if (typeof carrierNodeVersion !== 'string' || !/^v?\d+\.\d+/.test(carrierNodeVersion)) {
    throw new TypeError(`ptc sandbox options: carrierNodeVersion must be a Node version such as "v24.1.0", got ${show(carrierNodeVersion)}`);
  }
  return { backend: backend as BackendChoice, require: require as Enforcement, bwrapPath, carrierNodeVersion };
}

function list(values: readonly string[]): string {
  return values.map((value) => `"${value}"`).join(', ');
}

