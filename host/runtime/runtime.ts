// The library's runtime object: a short orchestrator over its named pieces: the configuration
// (config.ts), request resolution (request.ts), the warm pool (warm-pool.ts), admission of runs
// into the executor (admission.ts), the journal (journaled.ts), and disposal.
import { randomUUID } from 'node:crypto';
import { flattenBindings } from '../execution/bindings.ts';
import { resolveConfig, show, type ResolvedConfig, type RuntimeConfig } from './config.ts';
import { Executor, type RunResult } from '../execution/owners.ts';
import { stripTypes } from '../execution/typescript.ts';
import { releaseRemote } from '../worker/confinement.ts';
import { sweepLeftovers } from '../sandbox/index.ts';
import { executionInstructions, type ProgramFormat } from './instructions.ts';
import type { RevertRecord, CallRecord, RunRecord, SnippetRecord } from './journal.ts';
import type { Bindings } from '../execution/bindings.ts';
import type { OutputEntry } from '../execution/output-ledger.ts';
import { completeSpec, resolveRequest, type RunOptions, type RunRequest, type RunSpec, type ResumeOptions } from './request.ts';
import { holdDefaultPool } from './warm-pool.ts';
import { Admission } from './admission.ts';
import { checkJournalNames, journaled, needJournal, openJournal, withSnippets } from './journaled.ts';
import { traceContextOf, traced } from './traced.ts';
import { lookTime, runHandle, type RunHandle, type YieldedRun } from './handle.ts';

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
  /**
   * Runs a spec to its end; with `yieldAfterMs`, answers after that many milliseconds (or when the
   * program calls `yieldControl()`) with a `running` result holding the output so far and the
   * run's handle, while the program goes on under its deadline, limits and sandbox.
   */
  run(spec: RunSpec, options: RunOptions & { yieldAfterMs: number }): Promise<RunResult | YieldedRun>;
  run(spec: RunSpec, options?: RunOptions): Promise<RunResult>;
  /** Starts a spec and returns its handle at once: wait on it, iterate its output, cancel it. */
  start(spec: RunSpec, options?: RunOptions): RunHandle;
  /** Ends the owner's retained environment (after a run in progress finishes). */
  release(owner: object): Promise<void>;
  /**
   * For a front end's Tab: the names that can follow `path` in the owner's retained environment
   * (`[]`: its top-level names and globals; `['foo']`: the properties of `foo`), sorted. Empty
   * while the owner has no live environment or a run in progress. No program code runs: getters
   * are not called and proxies are not asked.
   */
  complete(owner: object, path: string[]): Promise<string[]>;
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
  resume(runId: string, options: ResumeOptions & { yieldAfterMs: number }): Promise<RunResult | YieldedRun>;
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

/** A run's options as admitted: the caller's, plus the handle's listener for the program's yields. */
type AdmittedOptions = RunOptions & { onYield?: () => void };

/** Both listeners of an output entry: the handle's, then the caller's. */
function follow(first: (entry: OutputEntry) => void, second: ((entry: OutputEntry) => void) | undefined): (entry: OutputEntry) => void {
  return second === undefined ? first : (entry) => {
    first(entry);
    second(entry);
  };
}

/** The first look at a run after `ms`: the final result when it ended by then, else a yielded run with its handle. */
async function yieldAfter(ms: number, handle: RunHandle): Promise<RunResult | YieldedRun> {
  const look = await handle.wait(ms);
  return look.status === 'running' ? { ...look, handle } : look;
}

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
  const pool = holdDefaultPool(config);
  const shape = executionShape(config);
  const executor = new Executor(config, shape.format, shape.retains);
  const admission = new Admission(executor, config, shape.format);
  const journal = openJournal(config);
  let disposed = false;

  const assertLive = (what: string): void => {
    if (disposed) throw new Error(`ptc runtime: ${what} called after dispose()`);
  };
  // A journaled run calls the saved snippets as `snippets.<name>(input)`: each a run of its own,
  // with the caller's bindings and approval handler.
  const snippetRun = (tree: Bindings, options: RunOptions) => (program: string): Promise<RunResult> =>
    runtime.run(runtime.resolve({ program, bindings: tree }), { ...(options.onApproval ? { onApproval: options.onApproval } : {}), ...(options.signal ? { signal: options.signal } : {}) });

  const runIdOf = (options: RunOptions): string => {
    if (options.runId !== undefined && (typeof options.runId !== 'string' || options.runId === '')) throw new TypeError(`ptc run(): runId must be a non-empty string, got ${show(options.runId)}`);
    return options.runId ?? randomUUID();
  };
  // Checks and journals synchronously, so start() throws a caller's mistake at once; the run itself is the promise.
  const begin = (given: RunSpec, options: AdmittedOptions, runId: string): Promise<RunResult> => {
    const spec = completeSpec(given, config);
    const bindings = flattenBindings(spec.bindings);
    const run = { runId, resumed: false, context: traceContextOf(options, 'ptc run()') };
    if (journal === undefined) return traced(config, run, (trace) => admission.execute(spec, bindings, options, runId, undefined, trace));
    checkJournalNames(bindings);
    withSnippets(journal, bindings, snippetRun(spec.bindings, options));
    const recorded = journal.begin(runId, spec.program, { cwd: spec.cwd, filename: spec.filename, timeoutMs: spec.timeoutMs, cpuTimeMs: spec.cpuTimeMs, discardCompletion: spec.discardCompletion, policy: spec.policy });
    return traced(config, run, (trace) => journaled(journal, recorded, () => admission.execute(spec, bindings, options, runId, recorded, trace)));
  };
  const takeUp = async (runId: string, options: ResumeOptions & AdmittedOptions): Promise<RunResult> => {
    const { bindings: given, runId: _ignored, yieldAfterMs: _look, ...runOptions } = options as ResumeOptions & AdmittedOptions & { yieldAfterMs?: number };
    const found = needJournal(journal, 'resume()');
    const context = traceContextOf(runOptions, 'ptc resume()');
    const taken = found.reopen(runId);
    let spec: ReturnType<typeof completeSpec>;
    let bindings: ReturnType<typeof flattenBindings>;
    try {
      spec = completeSpec(runtime.resolve({ program: taken.program, bindings: given ?? {}, ...taken.request }), config);
      bindings = flattenBindings(spec.bindings);
      withSnippets(found, bindings, snippetRun(spec.bindings, runOptions));
    } catch (error) {
      found.abandon(taken.journal);
      throw error;
    }
    return traced(config, { runId, resumed: true, context }, (trace) => journaled(found, taken.journal, () => admission.execute(spec, bindings, runOptions, runId, taken.journal, trace)));
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
      return resolveRequest(request, config);
    },

    run: (async (given: RunSpec, options: RunOptions & { yieldAfterMs?: number } = {}) => {
      assertLive('run()');
      if (options.yieldAfterMs === undefined) return begin(given, options, runIdOf(options));
      return yieldAfter(lookTime(options.yieldAfterMs, 'ptc run(): yieldAfterMs'), runtime.start(given, options));
    }) as Runtime['run'],

    start(given, options = {}) {
      assertLive('start()');
      const { yieldAfterMs: _look, ...rest } = options as RunOptions & { yieldAfterMs?: number };
      const runId = runIdOf(rest);
      return runHandle(runId, (signal, feed) => begin(given, { ...rest, signal, onOutput: follow(feed.output, rest.onOutput), onYield: feed.yielded }, runId), rest.signal).handle;
    },

    resume: (async (runId: string, options: ResumeOptions & { yieldAfterMs?: number }) => {
      assertLive('resume()');
      if (typeof runId !== 'string') throw new TypeError(`ptc resume(): runId must be a string, got ${show(runId)}`);
      if (typeof options !== 'object' || options === null) throw new TypeError(`ptc resume(): options must be an object with the run's bindings, got ${show(options)}`);
      if (options.yieldAfterMs === undefined) return takeUp(runId, options);
      const yieldAfterMs = lookTime(options.yieldAfterMs, 'ptc resume(): yieldAfterMs');
      const feed = runHandle(runId, (signal, feed) => takeUp(runId, { ...options, signal, onOutput: follow(feed.output, options.onOutput), onYield: feed.yielded }), options.signal);
      return yieldAfter(yieldAfterMs, feed.handle);
    }) as Runtime['resume'],

    runs: () => needJournal(journal, 'runs()').runs(),
    calls: (runId) => needJournal(journal, 'calls()').calls(runId),
    async revert(runId, options) {
      assertLive('revert()');
      const found = needJournal(journal, 'revert()');
      if (typeof options !== 'object' || options === null) throw new TypeError(`ptc revert(): options must be an object with the run's bindings, got ${show(options)}`);
      return found.revert(runId, flattenBindings(options.bindings));
    },
    saveSnippet: (name, runId, description) => needJournal(journal, 'saveSnippet()').saveSnippet(name, runId, description),
    snippets: () => needJournal(journal, 'snippets()').snippets(),

    async dispose() {
      if (disposed) return;
      disposed = true;
      admission.abortAll(new Error('runtime disposed'));
      await Promise.all([executor.dispose(), pool.release(), swept]);
      journal?.close();
      // The remote connection (an SSH master) outlives no runtime that opened it.
      await releaseRemote(config);
    },

    async release(owner) {
      // The same owners resolve() accepts as a stateOwner: any object, a function included.
      if ((typeof owner !== 'object' || owner === null) && typeof owner !== 'function') throw new TypeError(`ptc release(): owner must be an object, got ${show(owner)}`);
      await executor.release(owner);
    },

    async complete(owner, path) {
      if ((typeof owner !== 'object' || owner === null) && typeof owner !== 'function') throw new TypeError(`ptc complete(): owner must be an object, got ${show(owner)}`);
      if (!Array.isArray(path) || !path.every((name) => typeof name === 'string')) throw new TypeError(`ptc complete(): path must be an array of names, got ${show(path)}`);
      return executor.complete(owner, path);
    },

    async warmUp() {
      assertLive('warmUp()');
      await pool.warmUp();
    },

    registerEnvironmentInitializer(program) {
      assertLive('registerEnvironmentInitializer()');
      if (config.executionMode !== 'persistent-in-memory') {
        throw new Error(`ptc registerEnvironmentInitializer(): only executionMode "persistent-in-memory" has environment initializers, not ${show(config.executionMode)}`);
      }
      if (admission.admitted) throw new Error('ptc registerEnvironmentInitializer(): call it before the first run is admitted');
      if (typeof program !== 'string') throw new TypeError(`ptc registerEnvironmentInitializer(): program must be a string, got ${show(program)}`);
      const stripped = stripTypes(program, '[initializer]', shape.format);
      if (!stripped.ok) throw new SyntaxError(`ptc registerEnvironmentInitializer(): ${stripped.error.message}${stripped.error.location ? ` at line ${stripped.error.location.line}, column ${stripped.error.location.column}` : ''}`);
      return executor.setInitializer(stripped.code);
    },
  };
  return Object.freeze(runtime);
}
