// Runtime configuration: the reference's fields, names and defaults, validated once at creation.
// Every error names the field and quotes the value, and unknown fields are refused so a typo
// never silently falls back to a default.
import { accessSync, constants, statSync } from 'node:fs';
import { totalmem } from 'node:os';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';
import { isSea } from 'node:sea';
import { checkPolicyShape, DEFAULT_POLICY, resolveSandboxOptions, SANDBOX_MODES, type SandboxOptions, type SandboxPolicy } from '../sandbox/index.ts';
import type { LaunchConfig } from '../worker/launch.ts';
import { EXECUTION_MODES, type ExecutionMode, type ResolvedConfig, type RuntimeDiagnostic } from '../execution/settings.ts';
import { show } from '../../wire/show.ts';
import { diskLimit, resourceLimit } from './resource-limits.ts';
import { resolveImports, type ImportsConfig } from './imports-config.ts';
import { resolveApproval, type ApprovalConfig } from './approval-config.ts';
import { resolveJournalPath } from './journal-config.ts';

export type { ExecutionMode, LaunchConfig, ResolvedConfig };
export { show };

export interface RuntimeConfig {
  /** per-call: a fresh process per program; vm-script: Script programs; persistent-in-memory: a REPL retained per owner. @default 'per-call' */
  executionMode?: ExecutionMode;
  /** Retain a vm-script context per owner; only with executionMode 'vm-script'. @default false */
  scriptPersistence?: boolean;
  /** The scoped REPL (true) or Node's REPL evaluator (false); only with persistent-in-memory. @default true with persistent-in-memory */
  replScoped?: boolean;
  /** Default elapsed deadline in ms. @default 120000 */
  timeoutMs?: number;
  /** Ceiling applied to requested deadlines. @default 600000 */
  maxTimeoutMs?: number;
  /** Combined budget of output and completion or diagnostic bytes. @default 67108864 */
  maxOutputBytes?: number;
  /** V8 old-generation heap limit of the carrier, MiB. @default 512 */
  maxOldGenerationSizeMb?: number;
  /** CPU time of a run, ms, of the carrier and every process it started (waiting is free); a request may set its own. Linux, local carriers. @default null (none) */
  cpuTimeMs?: number | null;
  /** Resident memory of the carrier's whole process tree, MiB (a cgroup where the host can make one, else a /proc watchdog). Linux, local carriers. @default null (none) */
  maxMemoryMb?: number | null;
  /** What the carrier's whole process tree may write to disk over its life, MiB: bytes written to storage, plus the growth of writable directories on a RAM file system; over it the tree is killed (worker-exit). Watched by the host, or by the relay for a remote carrier; Linux. null for none. @default 1024 */
  maxDiskMb?: number | null;
  /** Limit for one control message, outstanding binding-argument bytes and queued writes. @default 134217728 */
  maxMessageBytes?: number;
  /** Simultaneous binding calls. @default 128 */
  maxPendingCalls?: number;
  /** Wait for a cooperative stop acknowledgment before killing. @default 3000 */
  stopGraceMs?: number;
  /** Termination and output-drain grace. @default 3000 */
  graceMs?: number;
  /** How the carrier is started. @default the local carrier (this binary, or bootstrap/main.ts from source) */
  launch?: LaunchConfig;
  /** Keep fresh, never-used carriers booted ahead of the next runs (the warm pool, sized by `pool`). @default true */
  prestartCarrier?: boolean;
  /**
   * The warm pool's bounds: it keeps as many booted carriers as runs took in the last 10 s, at
   * least `min` and at most `max` (each an idle Node process: `max` bounds the pool's memory).
   * Runtimes whose carriers would be the same share one pool, sized by the largest bounds.
   * @default { min: 1, max: the machine's memory in GiB, from 4 to 32 }
   */
  pool?: { min?: number; max?: number };
  /** How confinement is obtained. @default { backend: 'auto', require: 'partial' } */
  sandbox?: Omit<SandboxOptions, 'carrierNodeVersion'>;
  /** The policy of runs that name none. @default { mode: 'workspace-write' } (the cwd, no network) */
  policy?: SandboxPolicy;
  /** Release an owner's retained environment after this many ms without a run; its next run starts fresh. @default none (kept until release) */
  idleTimeoutMs?: number;
  /** Retained environments kept at once; a new owner past it releases the least recently used idle one. @default none (no limit) */
  maxRetainedEnvironments?: number;
  /** What programs may import, and what some specifiers load instead (docs/imports.md). @default none (Node's loader, unchecked) */
  imports?: ImportsConfig;
  /** Programs get `search(query)` and `describe(name)` over the run's tools (docs/discovery.md). @default false */
  discovery?: boolean;
  /** Which binding calls wait for a person, and for how long (docs/approvals-and-journal.md, "Approvals"). @default only bindings marked `binding(fn, { approval: true })`, one hour */
  approval?: ApprovalConfig;
  /** The journal: a SQLite file on the host recording every run's calls and outcome, for resume, audit and snippets (docs/approvals-and-journal.md, "Recovery"). @default none */
  journal?: string;
  /** The host's logger: receives what happens outside any run, with the state owner it concerns (a retained environment lost while idle). A logger that throws is ignored. @default none (the owner's next result still says `environment.replaced`) */
  onDiagnostic?: (diagnostic: RuntimeDiagnostic) => void;
}

/** More idle carriers than this in one pool would be a configuration mistake (each is a Node process). */
const MAX_POOL = 64;
/**
 * The warm pool's default bounds: one carrier ahead, and for a burst as many as the machine has
 * GiB of memory, from 4 to 32. The pool holds carriers past `min` only while a burst that took
 * them is under 10 s old; each idle one is ~60 MB of RSS (~15 MB of it its own, the rest shared
 * pages of the binary), so the ceiling stays under 6 % of memory even as RSS. A burst of 20 runs
 * on a 24 GiB machine then finds 20 booted carriers the next time, where 4 left 16 of them to boot.
 */
export const DEFAULT_POOL = Object.freeze({ min: 1, max: Math.min(32, Math.max(4, Math.floor(totalmem() / 2 ** 30))) });

export const DEFAULTS: Omit<ResolvedConfig, 'launch' | 'sandbox' | 'policy' | 'cpuTimeMs' | 'maxMemoryMb' | 'maxDiskMb' | 'idleTimeoutMs' | 'maxRetainedEnvironments' | 'imports' | 'pool' | 'approval' | 'journal' | 'onDiagnostic'> = {
  executionMode: 'per-call',
  scriptPersistence: false,
  replScoped: false,
  timeoutMs: 120_000,
  maxTimeoutMs: 600_000,
  maxOutputBytes: 67_108_864,
  maxOldGenerationSizeMb: 512,
  maxMessageBytes: 134_217_728,
  maxPendingCalls: 128,
  stopGraceMs: 3_000,
  graceMs: 3_000,
  prestartCarrier: true,
  discovery: false,
};

/** Node's timers hold a signed 32-bit delay; a longer one fires after 1 ms instead (with a warning). */
export const MAX_TIMER_MS = 2_147_483_647;

// The resource and retention limits have no default (none means unlimited), so they are not in DEFAULTS.
const FIELDS = new Set([...Object.keys(DEFAULTS), 'launch', 'sandbox', 'policy', 'cpuTimeMs', 'maxMemoryMb', 'maxDiskMb', 'idleTimeoutMs', 'maxRetainedEnvironments', 'imports', 'pool', 'approval', 'journal', 'onDiagnostic']);

/** Validates a configuration object and fills defaults; throws TypeError/RangeError naming the field. */
export function resolveConfig(input: unknown): ResolvedConfig {
  if (input === undefined) input = {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TypeError(`ptc config must be an object, got ${show(input)}`);
  }
  const config = input as Record<string, unknown>;
  for (const field of Object.keys(config)) {
    if (!FIELDS.has(field)) throw new TypeError(`ptc config: unknown field "${field}" (value ${show(config[field])})`);
  }
  const executionMode = config.executionMode ?? DEFAULTS.executionMode;
  if (executionMode === 'durable') {
    // The reference defers "durable" until a design defines its recovery; this one is the journal.
    throw new RangeError('ptc config: executionMode "durable" is not a mode here: durable runs are per-call runs with a `journal` (docs/approvals-and-journal.md, "Recovery"), got executionMode "durable"');
  }
  if (typeof executionMode !== 'string' || !(EXECUTION_MODES as readonly string[]).includes(executionMode)) {
    throw new RangeError(`ptc config: executionMode must be one of ${EXECUTION_MODES.map((m) => `"${m}"`).join(', ')}, got ${show(executionMode)}`);
  }
  const scriptPersistence = boolean(config, 'scriptPersistence');
  if (scriptPersistence && executionMode !== 'vm-script') {
    throw new RangeError(`ptc config: scriptPersistence: true requires executionMode "vm-script", got executionMode ${show(executionMode)}`);
  }
  const replScoped = config.replScoped === undefined ? executionMode === 'persistent-in-memory' : boolean(config, 'replScoped');
  if (replScoped && executionMode !== 'persistent-in-memory') {
    throw new RangeError(`ptc config: replScoped: true requires executionMode "persistent-in-memory", got executionMode ${show(executionMode)}`);
  }

  const launch = launchConfig(config.launch);
  const resolved: ResolvedConfig = {
    executionMode: executionMode as ExecutionMode,
    scriptPersistence,
    replScoped,
    timeoutMs: timerDelay(config, 'timeoutMs', 1),
    maxTimeoutMs: timerDelay(config, 'maxTimeoutMs', 1),
    maxOutputBytes: positiveInteger(config, 'maxOutputBytes'),
    maxOldGenerationSizeMb: positiveInteger(config, 'maxOldGenerationSizeMb'),
    maxMessageBytes: positiveInteger(config, 'maxMessageBytes'),
    maxPendingCalls: positiveInteger(config, 'maxPendingCalls'),
    stopGraceMs: timerDelay(config, 'stopGraceMs', 0),
    graceMs: timerDelay(config, 'graceMs', 0),
    cpuTimeMs: resourceLimit(config.cpuTimeMs, 'cpuTimeMs', 'ptc config', launch),
    maxMemoryMb: resourceLimit(config.maxMemoryMb, 'maxMemoryMb', 'ptc config', launch),
    maxDiskMb: diskLimit(config.maxDiskMb, 'ptc config', launch),
    launch,
    prestartCarrier: boolean(config, 'prestartCarrier'),
    discovery: boolean(config, 'discovery'),
    pool: poolSize(config.pool),
    sandbox: sandboxOptions(config.sandbox),
    policy: policyShape(config.policy ?? DEFAULT_POLICY, 'policy'),
    ...retentionLimits(config),
    approval: resolveApproval(config.approval),
  };
  if (config.onDiagnostic !== undefined) {
    if (typeof config.onDiagnostic !== 'function') throw new TypeError(`ptc config: onDiagnostic must be a function of a diagnostic, got ${show(config.onDiagnostic)}`);
    resolved.onDiagnostic = config.onDiagnostic as (diagnostic: RuntimeDiagnostic) => void;
  }
  const journal = resolveJournalPath(config.journal);
  if (journal !== undefined) resolved.journal = journal;
  const imports = resolveImports(config.imports);
  if (imports !== undefined) resolved.imports = imports;
  if (resolved.journal !== undefined && resolved.executionMode !== 'per-call') {
    // Resume re-runs the whole program in a fresh carrier; a retained environment's variables would not come back.
    throw new RangeError(`ptc config: journal requires executionMode "per-call" (a resume re-runs the program in a fresh carrier), got executionMode ${show(resolved.executionMode)}`);
  }
  if (resolved.timeoutMs > resolved.maxTimeoutMs) {
    throw new RangeError(`ptc config: timeoutMs (${resolved.timeoutMs}) must not exceed maxTimeoutMs (${resolved.maxTimeoutMs})`);
  }
  if (resolved.maxOldGenerationSizeMb < 16) {
    throw new RangeError(`ptc config: maxOldGenerationSizeMb must be at least 16, got ${resolved.maxOldGenerationSizeMb}`);
  }
  if (resolved.maxMessageBytes < 1024) {
    throw new RangeError(`ptc config: maxMessageBytes must be at least 1024, got ${resolved.maxMessageBytes}`);
  }
  return resolved;
}

function boolean(config: Record<string, unknown>, field: 'scriptPersistence' | 'replScoped' | 'prestartCarrier' | 'discovery'): boolean {
  const value = config[field] ?? DEFAULTS[field];
  if (typeof value !== 'boolean') throw new TypeError(`ptc config: ${field} must be a boolean, got ${show(value)}`);
  return value;
}

type NumericField = { [K in keyof typeof DEFAULTS]: (typeof DEFAULTS)[K] extends number ? K : never }[keyof typeof DEFAULTS];

function positiveInteger(config: Record<string, unknown>, field: NumericField): number {
  const value = config[field] ?? DEFAULTS[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`ptc config: ${field} must be a positive integer, got ${show(value)}`);
  }
  return value;
}

/** A delay that becomes a Node timer: an integer from `least` up to MAX_TIMER_MS. */
function timerDelay(config: Record<string, unknown>, field: NumericField, least: 0 | 1): number {
  const value = config[field] ?? DEFAULTS[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < least || value > MAX_TIMER_MS) {
    const kind = least === 1 ? 'a positive integer' : 'a non-negative integer';
    throw new RangeError(`ptc config: ${field} must be ${kind} of at most ${MAX_TIMER_MS} ms (Node's timer limit), got ${show(value)}`);
  }
  return value;
}

function poolSize(value: unknown): { min: number; max: number } {
  if (value === undefined) return DEFAULT_POOL;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`ptc config: pool must be an object { min, max }, got ${show(value)}`);
  const pool = value as Record<string, unknown>;
  for (const field of Object.keys(pool)) {
    if (field !== 'min' && field !== 'max') throw new TypeError(`ptc config: unknown field "pool.${field}" (value ${show(pool[field])})`);
  }
  const count = (field: 'min' | 'max'): number | undefined => {
    const given = pool[field];
    if (given !== undefined && (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 0 || given > MAX_POOL)) {
      throw new RangeError(`ptc config: pool.${field} must be an integer from 0 to ${MAX_POOL}, got ${show(given)}`);
    }
    return given as number | undefined;
  };
  // A bound given alone moves the other one only as far as it must.
  const givenMin = count('min');
  const givenMax = count('max');
  const min = givenMin ?? Math.min(DEFAULT_POOL.min, givenMax ?? DEFAULT_POOL.min);
  const max = givenMax ?? Math.max(DEFAULT_POOL.max, min);
  if (min > max) throw new RangeError(`ptc config: pool.min (${min}) must not exceed pool.max (${max})`);
  return Object.freeze({ min, max });
}

/** idleTimeoutMs (a timer delay) and maxRetainedEnvironments (a count), each only when given. */
function retentionLimits(config: Record<string, unknown>): Pick<ResolvedConfig, 'idleTimeoutMs' | 'maxRetainedEnvironments'> {
  const limits: Pick<ResolvedConfig, 'idleTimeoutMs' | 'maxRetainedEnvironments'> = {};
  const idle = config.idleTimeoutMs;
  if (idle !== undefined) {
    if (typeof idle !== 'number' || !Number.isSafeInteger(idle) || idle < 1 || idle > MAX_TIMER_MS) {
      throw new RangeError(`ptc config: idleTimeoutMs must be a positive integer of at most ${MAX_TIMER_MS} ms (Node's timer limit), got ${show(idle)}`);
    }
    limits.idleTimeoutMs = idle;
  }
  const most = config.maxRetainedEnvironments;
  if (most !== undefined) {
    if (typeof most !== 'number' || !Number.isSafeInteger(most) || most < 1) {
      throw new RangeError(`ptc config: maxRetainedEnvironments must be a positive integer, got ${show(most)}`);
    }
    limits.maxRetainedEnvironments = most;
  }
  return limits;
}

const LAUNCH_FIELDS: Record<string, string[]> = {
  embedded: ['kind', 'executable'],
  'node-script': ['kind', 'executable', 'bootstrapPath'],
  ssh: ['kind', 'destination', 'port', 'sshArgs', 'node', 'bootstrapPath'],
  command: ['kind', 'command', 'node', 'bootstrapPath'],
};

function launchConfig(value: unknown): LaunchConfig | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) throw new TypeError(`ptc config: launch must be an object, got ${show(value)}`);
  const launch = value as Record<string, unknown>;
  const allowed = typeof launch.kind === 'string' ? LAUNCH_FIELDS[launch.kind] : undefined;
  if (allowed === undefined || !Object.hasOwn(LAUNCH_FIELDS, launch.kind as string)) {
    throw new RangeError(`ptc config: launch.kind must be one of ${Object.keys(LAUNCH_FIELDS).map((kind) => `"${kind}"`).join(', ')}, got ${show(launch.kind)}`);
  }
  for (const field of Object.keys(launch)) {
    if (!allowed.includes(field)) throw new TypeError(`ptc config: unknown field "launch.${field}" for launch.kind "${launch.kind}"`);
  }
  for (const field of ['executable', 'bootstrapPath', 'node', 'destination']) {
    if (launch[field] !== undefined && (typeof launch[field] !== 'string' || launch[field] === '')) {
      throw new TypeError(`ptc config: launch.${field} must be a non-empty string, got ${show(launch[field])}`);
    }
  }
  // Without an executable, embedded means this process's own binary, which only a ptc binary is:
  // a plain Node re-executed with the carrier selector would run nothing and exit 0.
  if (launch.kind === 'embedded' && launch.executable === undefined && !isSea()) {
    throw new TypeError(`ptc config: launch.kind "embedded" without launch.executable re-executes this binary, and this host is not the ptc binary but Node (${process.execPath}); give launch.executable, the path of dist/ptc`);
  }
  if (launch.kind === 'node-script' && launch.executable === undefined) {
    throw new TypeError('ptc config: launch.executable is required for launch.kind "node-script"');
  }
  if (launch.kind === 'ssh') {
    if (launch.destination === undefined) throw new TypeError('ptc config: launch.destination is required for launch.kind "ssh" (user@host, a Host alias, or ssh://user@host:port)');
    // ssh would read a leading "-" as an option: a destination must never be able to inject one.
    if ((launch.destination as string).startsWith('-') || /\s/.test(launch.destination as string)) {
      throw new RangeError(`ptc config: launch.destination must be user@host, a Host alias or ssh://user@host:port, got ${show(launch.destination)}`);
    }
    if (launch.port !== undefined && (!Number.isSafeInteger(launch.port) || (launch.port as number) < 1 || (launch.port as number) > 65535)) {
      throw new RangeError(`ptc config: launch.port must be an integer from 1 to 65535, got ${show(launch.port)}`);
    }
    stringList(launch, 'sshArgs', false);
  }
  if (launch.kind === 'command') {
    stringList(launch, 'command', true);
    if (launch.bootstrapPath === undefined) throw new TypeError('ptc config: launch.bootstrapPath is required for launch.kind "command" (where bootstrap.mjs is on the far side)');
  }
  if (launch.kind === 'ssh' || launch.kind === 'command') {
    // Their node and bootstrapPath name files on the far side, where the host cannot resolve them.
    return Object.freeze({ ...launch }) as unknown as LaunchConfig;
  }
  // Fixed now, against the host's cwd and PATH: a carrier is spawned in each run's cwd, where a
  // relative path or a PATH lookup would find whatever the workspace holds.
  const resolved: Record<string, string> = { kind: launch.kind as string };
  if (launch.executable !== undefined) resolved.executable = executablePath(launch.executable as string);
  if (launch.bootstrapPath !== undefined) resolved.bootstrapPath = resolvePath(launch.bootstrapPath as string);
  return Object.freeze(resolved) as unknown as LaunchConfig;
}

/** A path (with a slash) against the host's cwd; a bare command name through the host's PATH, absolute entries only. */
function executablePath(value: string): string {
  if (value.includes('/')) return resolvePath(value);
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((dir) => isAbsolute(dir));
  for (const dir of dirs) {
    const candidate = join(dir, value);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  throw new RangeError(`ptc config: launch.executable ${show(value)} was not found as an executable file on PATH (${dirs.join(delimiter) || 'empty'}); give a path`);
}

function stringList(launch: Record<string, unknown>, field: string, required: boolean): void {
  const value = launch[field];
  if (value === undefined && !required) return;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string') || (required && (value.length === 0 || value[0] === ''))) {
    throw new TypeError(`ptc config: launch.${field} must be ${required ? 'a non-empty array' : 'an array'} of strings, got ${show(value)}`);
  }
}

function sandboxOptions(value: unknown): Omit<SandboxOptions, 'carrierNodeVersion'> {
  if (value !== undefined && typeof value === 'object' && value !== null && 'carrierNodeVersion' in value) {
    throw new TypeError('ptc config: unknown field "sandbox.carrierNodeVersion" (the runtime asks the carrier\'s Node itself)');
  }
  const { backend, require, bwrapPath } = resolveSandboxOptions(value ?? {});
  return { backend, require, ...(bwrapPath !== undefined ? { bwrapPath } : {}) };
}

/** Checks a policy's fields and values; its paths are resolved (and must exist) when a run uses it. */
export function policyShape(value: unknown, field: string): SandboxPolicy {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`ptc ${field} must be an object, got ${show(value)}`);
  const policy = value as Record<string, unknown>;
  if (!(SANDBOX_MODES as readonly unknown[]).includes(policy.mode)) {
    throw new RangeError(`ptc ${field}.mode must be one of ${SANDBOX_MODES.map((m) => `"${m}"`).join(', ')}, got ${show(policy.mode)}`);
  }
  try {
    checkPolicyShape(value);
  } catch (error) {
    // The runtime's own policy keeps the sandbox's wording; a request's says where it came from.
    if (field === 'policy') throw error;
    throw new (error instanceof RangeError ? RangeError : TypeError)((error as Error).message.replace(/^ptc sandbox policy/, `ptc ${field}`), { cause: error });
  }
  return value as SandboxPolicy;
}
