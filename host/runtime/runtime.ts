// The library's runtime object: configuration, request resolution, admission and disposal.
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { flattenBindings, type Bindings } from '../execution/bindings.ts';
import { policyShape, resolveConfig, show, type ResolvedConfig, type RuntimeConfig } from './config.ts';
import { Executor, type RunResult } from '../execution/owners.ts';
import { POLICY_CHANGES, type PolicyChange } from '../execution/owner-policy.ts';
import { stripTypes } from '../execution/typescript.ts';
import type { OutputEntry } from '../execution/output-ledger.ts';
import { confine, releaseRemote } from '../worker/confinement.ts';
import { holdPool, warmPool } from '../worker/pool.ts';
import { sweepLeftovers, type SandboxPolicy } from '../sandbox/index.ts';
import { executionInstructions, type ProgramFormat } from './instructions.ts';
import { resourceLimit } from './resource-limits.ts';
import type { ToolSchema } from './declarations.ts';
import { isToolCatalog, toolCatalog, type ToolCatalog } from './discovery/catalog.ts';
import { DISCOVERY_GLOBALS } from './discovery/globals.ts';
import { randomUUID } from 'node:crypto';
import type { ApprovalHandler } from '../execution/approval.ts';
import { Journal, type CallRecord, type RevertRecord, type RunRecord, type SnippetRecord } from './journal.ts';
import { snippetBindings } from './snippets.ts';
import type { RunJournal } from '../execution/journal/replay.ts';

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
   * @default undefined (a lossless JSON value)
   */
  display?: { colors?: boolean };
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
  readonly display?: { readonly colors: boolean };
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
  /** The run's id in pending actions and in the journal, where it must be new. @default a random UUID */
  runId?: string;
}

export interface TimeoutDescriptor {
  readonly defaultMs: number;
  readonly maxMs: number;
}

export interface Runtime {
  readonly config: Readonly<ResolvedConfig>;
  readonly timeout: TimeoutDescriptor;
  readonly programFormat: ProgramFormat;
  readonly executionInstructions: string;
  /** Whether runs with a stateOwner keep their environment between runs. */
  readonly retainsState: boolean;
  resolve(request: RunRequest): RunSpec;
  run(spec: RunSpec, options?: RunOptions): Promise<RunResult>;
  /** Ends the owner's retained environment (after a run in progress finishes). */
  release(owner: object): Promise<void>;
  /**
   * persistent-in-memory only, before the first run: source run once in every new environment.
   * Returns its unregistration: environments started after the call run no initializer, and the
   * promise resolves once the runs that were already initializing with it have ended.
   */
  registerEnvironmentInitializer(program: string): () => Promise<void>;
  /**
   * Resolves once the warm pool for runs under the runtime's own policy in its default cwd holds
   * its target of booted carriers (at once when prestartCarrier is false), so the runs that follow
   * wait for no boot. Never rejects: a carrier that cannot boot is the next run's failure to report.
   */
  warmUp(): Promise<void>;
  /**
   * With a journal: runs again a journaled run that never finished (its host ended, or it was
   * left waiting for an approval). Calls the journal answered are not made again (README, "Recovery").
   */
  resume(runId: string, options: ResumeOptions): Promise<RunResult>;
  /** With a journal: every journaled run, oldest first. */
  runs(): RunRecord[];
  /** With a journal: one run's binding calls and steps, in sequence. */
  calls(runId: string): CallRecord[];
  /** With a journal: rolls back a run's applied calls, newest first, through each binding's `revert`. */
  revert(runId: string, options: { bindings: Bindings }): Promise<RevertRecord[]>;
  /** With a journal: saves the program of a run that finished ok; later runs call it as `snippets.<name>(input)`. */
  saveSnippet(name: string, runId: string, description?: string): SnippetRecord;
  /** With a journal: the saved snippets. */
  snippets(): SnippetRecord[];
  dispose(): Promise<void>;
}

export interface ResumeOptions extends RunOptions {
  /** The bindings to run the calls the journal has no answer for: functions are not journaled. */
  bindings?: Bindings;
}

const REQUEST_FIELDS = new Set(['program', 'bindings', 'tools', 'cwd', 'timeoutMs', 'cpuTimeMs', 'discardCompletion', 'display', 'filename', 'stateOwner', 'policy', 'oneTime', 'onPolicyChange']);

/** The program format and retention of a configuration. */
export function executionShape(config: ResolvedConfig): { format: ProgramFormat; retains: boolean } {
  switch (config.executionMode) {
    case 'per-call':
      return { format: 'async-function', retains: false };
    case 'vm-script':
      return { format: 'vm-script', retains: config.scriptPersistence };
    case 'persistent-in-memory':
      return { format: config.replScoped ? 'scoped-repl' : 'repl', retains: true };
  }
}

/** Creates a runtime; throws when the configuration names an unknown field or an invalid value. */
export function createRuntime(input?: RuntimeConfig): Runtime {
  const config = Object.freeze(resolveConfig(input));
  const swept = sweepLeftovers();
  const active = new Set<AbortController>();
  // The warm pool for the default policy in the default cwd (see resolve()): the shape most runs
  // have. Resolving the policy and probing the sandbox are asynchronous, so the pool is held once they are known.
  const defaultCwd = resolvePath(config.policy.workspaceRoot ?? process.cwd());
  const defaultPolicy = config.policy.workspaceRoot === undefined ? config.policy : { ...config.policy, workspaceRoot: defaultCwd };
  const pooled = !config.prestartCarrier
    ? Promise.resolve(undefined)
    : confine(config, defaultPolicy, defaultCwd).then(
        (confinement) => ('recipe' in confinement ? { recipe: confinement.recipe, release: holdPool(confinement.recipe, config.pool, config.graceMs) } : undefined),
        () => undefined,
      );
  let disposed = false;
  let admitted = false;
  let attachments = 0;
  const shape = executionShape(config);
  const executor = new Executor(config, shape.format, shape.retains);
  const journal = config.journal === undefined ? undefined : new Journal(config.journal);
  const needJournal = (what: string): Journal => {
    if (journal === undefined) throw new Error(`ptc ${what}: this runtime has no journal (config.journal names its file)`);
    return journal;
  };

  const assertLive = (what: string): void => {
    if (disposed) throw new Error(`ptc runtime: ${what} called after dispose()`);
  };

  const execute = async (spec: RunSpec, bindings: ReturnType<typeof flattenBindings>, options: RunOptions, runId: string, recorded?: RunJournal): Promise<RunResult> => {
    const controller = new AbortController();
    active.add(controller);
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    admitted = true;
    try {
      return await executor.run({
        program: spec.program,
        filename: spec.filename,
        cwd: spec.cwd,
        bindings,
        discardCompletion: spec.discardCompletion,
        ...(spec.display !== undefined ? { display: { colors: spec.display.colors } } : {}),
        timeoutMs: spec.timeoutMs,
        cpuTimeMs: spec.cpuTimeMs === undefined ? config.cpuTimeMs : resourceLimit(spec.cpuTimeMs, 'cpuTimeMs', 'ptc run(): spec', config.launch),
        signal,
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
        nextAttachmentId: () => `img-${++attachments}`,
        runId,
        approval: { ...config.approval, ...(options.onApproval !== undefined ? { handler: approvalHandler(options.onApproval) } : {}) },
        ...(recorded !== undefined ? { journal: recorded } : {}),
      }, spec.stateOwner, spec.policy, spec.oneTime ?? false, policyChangeOption(spec.onPolicyChange, 'ptc run(): spec.onPolicyChange'));
    } finally {
      active.delete(controller);
    }
  };
  // A journaled run calls the saved snippets as `snippets.<name>(input)`: each a run of its own,
  // with the caller's bindings and approval handler.
  const withSnippets = (flat: ReturnType<typeof flattenBindings>, tree: Bindings, options: RunOptions): void => {
    const saved = journal!.snippets();
    if (saved.length === 0) return;
    if ([...flat.keys()].some((name) => name === 'snippets' || name.startsWith('snippets.'))) {
      throw new TypeError('ptc run(): binding name "snippets" is taken by the saved snippets in a runtime whose journal has some');
    }
    const run = (program: string) => runtime.run(runtime.resolve({ program, bindings: tree }), { ...(options.onApproval ? { onApproval: options.onApproval } : {}), ...(options.signal ? { signal: options.signal } : {}) });
    for (const [name, fn] of snippetBindings(saved, run)) flat.set(name, fn);
  };
  const journaled = async (recorded: RunJournal, attempt: () => Promise<RunResult>): Promise<RunResult> => {
    let result: RunResult;
    try {
      result = await attempt();
    } catch (error) {
      journal!.abandon(recorded);
      throw error;
    }
    return journal!.finish(recorded, result);
  };

  // Frozen: `timeout`, `programFormat` and the rest are read-only for callers, not only in the types.
  const runtime: Runtime = {
    config,
    timeout: Object.freeze({ defaultMs: config.timeoutMs, maxMs: config.maxTimeoutMs }),
    programFormat: shape.format,
    executionInstructions: executionInstructions(shape.format, shape.retains, config.discovery),
    retainsState: shape.retains,

    resolve(request) {
      assertLive('resolve()');
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
        cpuTimeMs: request.cpuTimeMs === undefined ? config.cpuTimeMs : resourceLimit(request.cpuTimeMs, 'cpuTimeMs', 'ptc request', config.launch),
        discardCompletion,
        ...(display !== undefined ? { display } : {}),
        // A bracketed label such as "[stdin]" names no file, as in Node's own stacks; it stays as given.
        filename: /^\[[^\]/]+\]$/.test(filename) ? filename : resolvePath(cwd, filename),
        stateOwner,
        policy,
        oneTime,
        onPolicyChange,
      });
    },

    async run(spec, options = {}) {
      assertLive('run()');
      checkSpec(spec);
      checkDeadline(spec.timeoutMs, config);
      const bindings = flattenBindings(spec.bindings);
      if (options.runId !== undefined && (typeof options.runId !== 'string' || options.runId === '')) throw new TypeError(`ptc run(): runId must be a non-empty string, got ${show(options.runId)}`);
      const runId = options.runId ?? randomUUID();
      if (journal === undefined) return execute(spec, bindings, options, runId);
      if (bindings.has('step')) throw new TypeError('ptc run(): binding name "step" is taken by step(name, fn) in a runtime with a journal');
      withSnippets(bindings, spec.bindings, options);
      const cpuTimeMs = spec.cpuTimeMs === undefined ? config.cpuTimeMs : spec.cpuTimeMs;
      const recorded = journal.begin(runId, spec.program, { cwd: spec.cwd, filename: spec.filename, timeoutMs: spec.timeoutMs, cpuTimeMs, discardCompletion: spec.discardCompletion, policy: spec.policy ?? config.policy });
      return journaled(recorded, () => execute(spec, bindings, options, runId, recorded));
    },

    async resume(runId, options) {
      assertLive('resume()');
      if (typeof runId !== 'string') throw new TypeError(`ptc resume(): runId must be a string, got ${show(runId)}`);
      if (typeof options !== 'object' || options === null) throw new TypeError(`ptc resume(): options must be an object with the run's bindings, got ${show(options)}`);
      const { bindings: given, runId: _ignored, ...runOptions } = options;
      const found = needJournal('resume()');
      const taken = found.reopen(runId);
      let spec: RunSpec;
      let bindings: ReturnType<typeof flattenBindings>;
      try {
        spec = runtime.resolve({ program: taken.program, bindings: given ?? {}, ...taken.request });
        bindings = flattenBindings(spec.bindings);
        withSnippets(bindings, spec.bindings, runOptions);
      } catch (error) {
        found.abandon(taken.journal);
        throw error;
      }
      return journaled(taken.journal, () => execute(spec, bindings, runOptions, runId, taken.journal));
    },

    runs() {
      return needJournal('runs()').runs();
    },

    calls(runId) {
      return needJournal('calls()').calls(runId);
    },

    async revert(runId, options) {
      assertLive('revert()');
      const found = needJournal('revert()');
      if (typeof options !== 'object' || options === null) throw new TypeError(`ptc revert(): options must be an object with the run's bindings, got ${show(options)}`);
      return found.revert(runId, flattenBindings(options.bindings));
    },

    saveSnippet(name, runId, description) {
      return needJournal('saveSnippet()').saveSnippet(name, runId, description);
    },

    snippets() {
      return needJournal('snippets()').snippets();
    },

    async dispose() {
      if (disposed) return;
      disposed = true;
      for (const controller of active) controller.abort(new Error('runtime disposed'));
      await Promise.all([executor.dispose(), pooled.then((pool) => pool?.release()), swept]);
      journal?.close();
      // The remote connection (an SSH master) outlives no runtime that opened it.
      await releaseRemote(config);
    },

    async release(owner) {
      // The same owners resolve() accepts as a stateOwner: any object, a function included.
      if ((typeof owner !== 'object' || owner === null) && typeof owner !== 'function') throw new TypeError(`ptc release(): owner must be an object, got ${show(owner)}`);
      await executor.release(owner);
    },

    async warmUp() {
      assertLive('warmUp()');
      const pool = await pooled;
      if (pool !== undefined && !disposed) await warmPool(pool.recipe);
    },

    registerEnvironmentInitializer(program) {
      assertLive('registerEnvironmentInitializer()');
      if (config.executionMode !== 'persistent-in-memory') {
        throw new Error(`ptc registerEnvironmentInitializer(): only executionMode "persistent-in-memory" has environment initializers, not ${show(config.executionMode)}`);
      }
      if (admitted) throw new Error('ptc registerEnvironmentInitializer(): call it before the first run is admitted');
      if (typeof program !== 'string') throw new TypeError(`ptc registerEnvironmentInitializer(): program must be a string, got ${show(program)}`);
      const stripped = stripTypes(program, '[initializer]', shape.format);
      if (!stripped.ok) throw new SyntaxError(`ptc registerEnvironmentInitializer(): ${stripped.error.message}${stripped.error.location ? ` at line ${stripped.error.location.line}, column ${stripped.error.location.column}` : ''}`);
      return executor.setInitializer(stripped.code);
    },
  };
  return Object.freeze(runtime);
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

function approvalHandler(value: unknown): ApprovalHandler {
  if (typeof value !== 'function') throw new TypeError(`ptc run(): onApproval must be a function, got ${show(value)}`);
  return value as ApprovalHandler;
}

function policyChangeOption(value: unknown, field: string): PolicyChange {
  if (value === undefined) return 'refuse';
  if (!POLICY_CHANGES.includes(value as PolicyChange)) throw new TypeError(`${field} must be ${POLICY_CHANGES.map((choice) => `"${choice}"`).join(' or ')}, got ${show(value)}`);
  return value as PolicyChange;
}

function displayOption(value: unknown): { colors: boolean } | undefined {
  if (value === undefined) return undefined;
  const colors = (value as { colors?: unknown } | null)?.colors;
  if (typeof value !== 'object' || value === null || Object.keys(value).some((key) => key !== 'colors') || (colors !== undefined && typeof colors !== 'boolean')) {
    throw new TypeError(`ptc request: display must be an object with an optional boolean colors, got ${show(value)}`);
  }
  return Object.freeze({ colors: colors === true });
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
