// A run request, normalised once: resolve() checks a caller's request and fills every default
// into a frozen spec; run() takes a spec (from resolve(), or built by hand and then checked and
// completed the same way), so everything below it reads one shape.
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { flattenBindings, type Bindings } from '../execution/bindings.ts';
import { policyShape, show, type ResolvedConfig } from './config.ts';
import { POLICY_CHANGES, type PolicyChange } from '../execution/owner-policy.ts';
import type { OutputEntry } from '../execution/output-ledger.ts';
import type { SandboxPolicy } from '../sandbox/index.ts';
import { resourceLimit } from './resource-limits.ts';
import type { ToolSchema } from './declarations.ts';
import { isToolCatalog, toolCatalog, type ToolCatalog } from './discovery/catalog.ts';
import { DISCOVERY_GLOBALS } from './discovery/globals.ts';
import type { ApprovalHandler, ProgramApprovalHandler } from '../execution/approval.ts';

export interface RunRequest {
  /** The program: an async function body in erasable TypeScript. */
  program: string;
  /** Host functions the program can await; nested objects become namespaces. */
  bindings?: Bindings;
  /**
   * With the runtime's `discovery`: what `search` and `describe` know of the bindings, as tool
   * schemas (named by binding path) or a catalog from `toolCatalog()`, which indexes them once for
   * many runs. Every tool it lists must be a binding. @default the bindings' names alone
   */
  tools?: readonly ToolSchema[] | ToolCatalog;
  /** Working directory of the program. @default the policy's workspaceRoot when it names one, else process.cwd() */
  cwd?: string;
  /** Elapsed deadline: omitted for the default, a number (capped at maxTimeoutMs), or null for none. */
  timeoutMs?: number | null;
  /** CPU budget of this run in ms (the carrier and every process it started; waiting is free), or null for none. @default the runtime's cpuTimeMs */
  cpuTimeMs?: number | null;
  /** Omit the completion value without serializing it. @default false */
  discardCompletion?: boolean;
  /**
   * For interactive front ends: return the completion as Node's REPL shows it, as text in
   * `result.display` (util.inspect, ANSI-colored with `colors: true`), instead of a lossless JSON
   * `value`. Maps, Dates and Promises display rather than fail as invalid-output.
   * With `underscore: true` (retained modes), `_` holds the last completion and `_error` the last
   * thrown value in the environment, as in Node's interactive REPL; a program that assigns `_`
   * turns the automatic value off for the environment (told once in its output).
   * @default undefined (a lossless JSON value)
   */
  display?: { colors?: boolean; underscore?: boolean };
  /** Name shown in stack traces: a path (resolved from cwd) or a bracketed label such as "[stdin]". @default "program.ts" in cwd */
  filename?: string;
  /** Any object: runs with the same owner share one retained environment (retained modes only). */
  stateOwner?: object;
  /** File and network policy. @default the runtime's `policy` (workspace-write on cwd, no network) */
  policy?: SandboxPolicy;
  /** Run in a separate temporary environment even with a stateOwner (a one-time escalation); it cannot see or change the owner's variables. @default false */
  oneTime?: boolean;
  /**
   * When this run's policy differs from the one its stateOwner's live environment started with
   * (mode, workspace root, writable roots, network; or a cwd outside the workspace root when the
   * policy names none): 'refuse' throws, naming the change; 'replace' ends that environment and
   * runs in a new one, whose result says `environment.replaced`.
   * @default 'refuse'
   */
  onPolicyChange?: PolicyChange;
}

export interface RunSpec {
  readonly program: string;
  readonly bindings: Bindings;
  readonly cwd: string;
  readonly timeoutMs: number | null;
  readonly cpuTimeMs?: number | null;
  readonly discardCompletion: boolean;
  readonly display?: { readonly colors: boolean; readonly underscore?: true };
  readonly filename: string;
  readonly stateOwner: object | undefined;
  readonly policy: SandboxPolicy;
  readonly oneTime: boolean;
  readonly onPolicyChange?: PolicyChange;
}

export interface RunOptions {
  signal?: AbortSignal;
  onOutput?: (entry: OutputEntry) => void;
  /** Receives each gated call as a pending action; approve or reject it, or return a decision (README, "Approvals"). @default none: gated calls are rejected */
  onApproval?: ApprovalHandler;
  /**
   * Asks for one approval of the whole program before it runs, listing the gated bindings it can
   * reach; approving it approves their calls for the run (docs/approvals-and-journal.md, "Approving
   * a whole program"). @default none: each gated call is asked about on its own
   */
  onProgramApproval?: ProgramApprovalHandler;
  /** The run's id in pending actions and in the journal, where it must be new. @default a random UUID */
  runId?: string;
  /** A W3C traceparent: the run's span joins that trace in place of the active context's (docs/traces.md). @default the active context */
  traceparent?: string;
  /** The W3C tracestate that goes with `traceparent`. */
  tracestate?: string;
}

export interface ResumeOptions extends RunOptions {
  /** The bindings to run the calls the journal has no answer for: functions are not journaled. */
  bindings?: Bindings;
}

/** A spec with every field filled: what run() passes down. */
export type CompleteSpec = Required<Omit<RunSpec, 'display' | 'stateOwner'>> & Pick<RunSpec, 'display' | 'stateOwner'>;

const REQUEST_FIELDS = new Set(['program', 'bindings', 'tools', 'cwd', 'timeoutMs', 'cpuTimeMs', 'discardCompletion', 'display', 'filename', 'stateOwner', 'policy', 'oneTime', 'onPolicyChange']);

/** Checks a request and fills its defaults from the runtime's configuration; throws naming the bad field and value. */
export function resolveRequest(request: RunRequest, config: ResolvedConfig): RunSpec {
  if (typeof request !== 'object' || request === null) throw new TypeError(`ptc request must be an object, got ${show(request)}`);
  for (const field of Object.keys(request)) {
    if (!REQUEST_FIELDS.has(field)) throw new TypeError(`ptc request: unknown field "${field}"`);
  }
  if (typeof request.program !== 'string') throw new TypeError(`ptc request: program must be a string, got ${show(request.program)}`);
  if (request.cwd !== undefined && typeof request.cwd !== 'string') throw new TypeError(`ptc request: cwd must be a path, got ${show(request.cwd)}`);
  const requested = request.policy === undefined ? config.policy : policyShape(request.policy, 'request: policy');
  // Without a cwd a program runs in its policy's workspace root, or else in this process's
  // directory. A root that becomes the cwd is made absolute here, so the policy does not then
  // resolve a relative root against itself.
  const root = request.cwd === undefined ? requested.workspaceRoot : undefined;
  const cwd = resolvePath(request.cwd ?? root ?? process.cwd());
  const policy = root === undefined ? requested : Object.freeze({ ...requested, workspaceRoot: cwd });
  const discardCompletion = request.discardCompletion ?? false;
  if (typeof discardCompletion !== 'boolean') throw new TypeError(`ptc request: discardCompletion must be a boolean, got ${show(discardCompletion)}`);
  const display = displayOption(request.display);
  const filename = request.filename ?? 'program.ts';
  if (typeof filename !== 'string' || filename === '') throw new TypeError(`ptc request: filename must be a non-empty string, got ${show(filename)}`);
  const bindings = withDiscovery(request.bindings ?? {}, request.tools, config.discovery);
  const oneTime = request.oneTime ?? false;
  if (typeof oneTime !== 'boolean') throw new TypeError(`ptc request: oneTime must be a boolean, got ${show(oneTime)}`);
  const onPolicyChange = policyChangeOption(request.onPolicyChange, 'ptc request: onPolicyChange');
  const stateOwner = request.stateOwner;
  if (stateOwner !== undefined && (typeof stateOwner !== 'object' || stateOwner === null) && typeof stateOwner !== 'function') {
    throw new TypeError(`ptc request: stateOwner must be an object, got ${show(stateOwner)}`);
  }
  return Object.freeze({
    program: request.program,
    bindings,
    cwd,
    timeoutMs: resolveTimeout(request.timeoutMs, config),
    cpuTimeMs: cpuBudget(request.cpuTimeMs, config, 'ptc request'),
    discardCompletion,
    ...(display !== undefined ? { display } : {}),
    // A bracketed label such as "[stdin]" names no file, as in Node's own stacks; it stays as given.
    filename: /^\[[^\]/]+\]$/.test(filename) ? filename : resolvePath(cwd, filename),
    stateOwner,
    policy,
    oneTime,
    onPolicyChange,
  });
}

/**
 * Checks a spec given to run() and fills what one built by hand may leave out (oneTime, cpuTimeMs,
 * onPolicyChange) as resolve() would; throws when it is not a spec at all, or names no policy.
 */
export function completeSpec(spec: RunSpec, config: ResolvedConfig): CompleteSpec {
  checkSpec(spec);
  checkDeadline(spec.timeoutMs, config);
  return {
    ...spec,
    cpuTimeMs: cpuBudget(spec.cpuTimeMs, config, 'ptc run(): spec'),
    policy: spec.policy,
    oneTime: spec.oneTime ?? false,
    onPolicyChange: policyChangeOption(spec.onPolicyChange, 'ptc run(): spec.onPolicyChange'),
  };
}

/** A run's CPU budget: the runtime's cpuTimeMs when the request names none. */
function cpuBudget(value: unknown, config: ResolvedConfig, where: string): number | null {
  return value === undefined ? config.cpuTimeMs : resourceLimit(value, 'cpuTimeMs', where, config.launch);
}

/** The request's bindings, checked, plus `search` and `describe` over its tools when the runtime has discovery. */
function withDiscovery(bindings: Bindings, tools: RunRequest['tools'], discovery: boolean): Bindings {
  const flat = flattenBindings(bindings);
  if (!discovery) {
    if (tools !== undefined) throw new TypeError('ptc request: tools are what search() and describe() read; they need the runtime\'s discovery: true');
    return bindings;
  }
  for (const name of DISCOVERY_GLOBALS) {
    if (flat.has(name) || [...flat.keys()].some((key) => key.startsWith(`${name}.`))) {
      throw new TypeError(`binding name "${name}" is taken by discovery (the runtime's discovery: true); name it ${name}_, as declarations() with discovery does`);
    }
  }
  let catalog: ToolCatalog;
  if (isToolCatalog(tools)) catalog = tools;
  else if (tools === undefined) catalog = toolCatalog([...flat.keys()].map((name) => ({ name })));
  else if (Array.isArray(tools)) catalog = toolCatalog(tools);
  else throw new TypeError(`ptc request: tools must be an array of tool schemas or a toolCatalog(), got ${show(tools)}`);
  for (const path of catalog.paths) {
    if (!flat.has(path.join('.'))) throw new TypeError(`ptc request: tools lists ${path.join('.')}, which is not a binding`);
  }
  return { ...bindings, ...catalog.bindings() };
}

/** The caller's approval handler, checked. */
export function approvalHandler(value: unknown): ApprovalHandler {
  if (typeof value !== 'function') throw new TypeError(`ptc run(): onApproval must be a function, got ${show(value)}`);
  return value as ApprovalHandler;
}

function policyChangeOption(value: unknown, field: string): PolicyChange {
  if (value === undefined) return 'refuse';
  if (!POLICY_CHANGES.includes(value as PolicyChange)) throw new TypeError(`${field} must be ${POLICY_CHANGES.map((choice) => `"${choice}"`).join(' or ')}, got ${show(value)}`);
  return value as PolicyChange;
}

function displayOption(value: unknown): { colors: boolean; underscore?: true } | undefined {
  if (value === undefined) return undefined;
  const { colors, underscore } = (value ?? {}) as { colors?: unknown; underscore?: unknown };
  if (
    typeof value !== 'object' || value === null || Object.keys(value).some((key) => key !== 'colors' && key !== 'underscore') ||
    (colors !== undefined && typeof colors !== 'boolean') || (underscore !== undefined && typeof underscore !== 'boolean')
  ) {
    throw new TypeError(`ptc request: display must be an object with optional booleans colors and underscore, got ${show(value)}`);
  }
  return Object.freeze({ colors: colors === true, ...(underscore === true ? { underscore: true as const } : {}) });
}

function resolveTimeout(value: unknown, config: ResolvedConfig): number | null {
  if (value === undefined) return config.timeoutMs;
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`ptc request: timeoutMs must be a positive integer or null, got ${show(value)}`);
  }
  return Math.min(value, config.maxTimeoutMs);
}

// A spec is a plain object the caller can copy and change; a deadline past maxTimeoutMs (Infinity,
// or beyond what a Node timer holds, which would fire at once) is refused rather than mis-timed.
function checkDeadline(timeoutMs: number | null, config: ResolvedConfig): void {
  if (timeoutMs === null) return;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > config.maxTimeoutMs) {
    throw new RangeError(`ptc run(): spec.timeoutMs must be a positive integer up to maxTimeoutMs (${config.maxTimeoutMs}) or null for no deadline, got ${show(timeoutMs)}`);
  }
}

function checkSpec(spec: unknown): asserts spec is RunSpec {
  const value = spec as Partial<RunSpec> | null;
  if (
    typeof value !== 'object' || value === null || typeof value.program !== 'string' || typeof value.cwd !== 'string' ||
    typeof value.bindings !== 'object' || value.bindings === null ||
    !isAbsolute(value.cwd) || typeof value.filename !== 'string' || typeof value.discardCompletion !== 'boolean' ||
    !(value.timeoutMs === null || typeof value.timeoutMs === 'number')
  ) {
    throw new TypeError(`ptc run(): expected a spec from resolve(), got ${show(spec)}`);
  }
  // The reference's run() does not fill missing values. A missing policy is the one whose filling
  // would be a choice made for the caller (the sandbox the program runs in), so it is refused; the
  // other fields a spec may leave out have one safe reading (no owner, not one-time, the runtime's
  // CPU budget, refuse a policy change).
  if (typeof value.policy !== 'object' || value.policy === null) {
    const what = value.policy === undefined ? 'missing' : `not a policy (${show(value.policy)})`;
    throw new TypeError(`ptc run(): spec.policy is ${what}: run() does not choose the sandbox a spec runs in; pass the spec resolve() returned, which names the request's policy or the runtime's default`);
  }
}
