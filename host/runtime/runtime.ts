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
import { completeSpec, resolveRequest, type RunOptions, type RunRequest, type RunSpec, type ResumeOptions } from './request.ts';
import { holdDefaultPool } from './warm-pool.ts';
import { Admission } from './admission.ts';
import { checkJournalNames, journaled, needJournal, openJournal, withSnippets } from './journaled.ts';

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
  const admission = new Admission(executor, config);
  const journal = openJournal(config);
  let disposed = false;

  const assertLive = (what: string): void => {
    if (disposed) throw new Error(`ptc runtime: ${what} called after dispose()`);
  };
  // A journaled run calls the saved snippets as `snippets.<name>(input)`: each a run of its own,
  // with the caller's bindings and approval handler.
  const snippetRun = (tree: Bindings, options: RunOptions) => (program: string): Promise<RunResult> =>
    runtime.run(runtime.resolve({ program, bindings: tree }), { ...(options.onApproval ? { onApproval: options.onApproval } : {}), ...(options.signal ? { signal: options.signal } : {}) });

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

    async run(given, options = {}) {
      assertLive('run()');
      const spec = completeSpec(given, config);
      const bindings = flattenBindings(spec.bindings);
      if (options.runId !== undefined && (typeof options.runId !== 'string' || options.runId === '')) throw new TypeError(`ptc run(): runId must be a non-empty string, got ${show(options.runId)}`);
      const runId = options.runId ?? randomUUID();
      if (journal === undefined) return admission.execute(spec, bindings, options, runId);
      checkJournalNames(bindings);
      withSnippets(journal, bindings, snippetRun(spec.bindings, options));
      const recorded = journal.begin(runId, spec.program, { cwd: spec.cwd, filename: spec.filename, timeoutMs: spec.timeoutMs, cpuTimeMs: spec.cpuTimeMs, discardCompletion: spec.discardCompletion, policy: spec.policy });
      return journaled(journal, recorded, () => admission.execute(spec, bindings, options, runId, recorded));
    },

    async resume(runId, options) {
      assertLive('resume()');
      if (typeof runId !== 'string') throw new TypeError(`ptc resume(): runId must be a string, got ${show(runId)}`);
      if (typeof options !== 'object' || options === null) throw new TypeError(`ptc resume(): options must be an object with the run's bindings, got ${show(options)}`);
      const { bindings: given, runId: _ignored, ...runOptions } = options;
      const found = needJournal(journal, 'resume()');
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
      return journaled(found, taken.journal, () => admission.execute(spec, bindings, runOptions, runId, taken.journal));
    },

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
