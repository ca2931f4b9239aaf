// Execution glue: a completed spec and the caller's options become the one Execution the
// executor runs, with the runtime's own abort (dispose() stops every run in progress), its
// attachment ids and its approval settings.
import type { BindingFunction } from '../execution/bindings.ts';
import { Grants, type Grant, type ProgramApprovalHandler } from '../execution/approval.ts';
import { show } from '../../wire/show.ts';
import type { ProgramFormat } from './instructions.ts';
import { approveProgram } from './program-approval.ts';
import { Executor, type Execution, type RunResult } from '../execution/owners.ts';
import type { RunJournal } from '../execution/journal/replay.ts';
import type { RunTrace } from '../execution/tracing.ts';
import type { ResolvedConfig } from './config.ts';
import { approvalHandler, type CompleteSpec, type RunOptions } from './request.ts';

export class Admission {
  readonly #executor: Executor;
  readonly #config: ResolvedConfig;
  readonly #active = new Set<AbortController>();
  readonly #format: ProgramFormat;
  /** Answers scoped to a stateOwner, kept as long as the owner object lives. */
  readonly #ownerGrants = new WeakMap<object, Map<string, Grant>>();
  #attachments = 0;
  /** Whether a run has been admitted (environment initializers must be registered before). */
  admitted = false;

  constructor(executor: Executor, config: ResolvedConfig, format: ProgramFormat) {
    this.#executor = executor;
    this.#config = config;
    this.#format = format;
  }

  /** Runs one spec with its flattened bindings; `recorded` journals its calls, `trace` makes its spans. */
  async execute(spec: CompleteSpec, bindings: Map<string, BindingFunction>, options: RunOptions & { onYield?: () => void }, runId: string, recorded?: RunJournal, trace?: RunTrace): Promise<RunResult> {
    const controller = new AbortController();
    this.#active.add(controller);
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    this.admitted = true;
    const grants = this.#grants(spec.stateOwner, recorded);
    try {
      if (options.onProgramApproval !== undefined) {
        if (typeof options.onProgramApproval !== 'function') throw new TypeError(`ptc run(): onProgramApproval must be a function, got ${show(options.onProgramApproval)}`);
        const refused = await approveProgram({
          runId, program: spec.program, filename: spec.filename, format: this.#format, bindings,
          handler: options.onProgramApproval as ProgramApprovalHandler, timeoutMs: this.#config.approval.timeoutMs, signal, grants, journal: recorded,
        });
        if (refused !== undefined) return refused;
      }
      const execution = this.#execution(spec, bindings, options, signal, runId, recorded, grants);
      if (trace !== undefined) execution.trace = trace;
      return await this.#executor.run(execution, spec);
    } finally {
      this.#active.delete(controller);
    }
  }

  /** Aborts every run in progress. */
  abortAll(reason: Error): void {
    for (const controller of this.#active) controller.abort(reason);
  }

  /** The scoped answers a run sees: the owner's, and what its journal holds for a resumed run. */
  #grants(owner: object | undefined, recorded: RunJournal | undefined): Grants {
    let kept: Map<string, Grant> | undefined;
    if (owner !== undefined) {
      kept = this.#ownerGrants.get(owner);
      if (kept === undefined) this.#ownerGrants.set(owner, (kept = new Map()));
    }
    const grants = new Grants(kept);
    for (const { binding, grant } of recorded?.grants ?? []) grants.put(binding, grant);
    return grants;
  }

  #execution(spec: CompleteSpec, bindings: Map<string, BindingFunction>, options: RunOptions & { onYield?: () => void }, signal: AbortSignal, runId: string, recorded: RunJournal | undefined, grants: Grants): Execution {
    return {
      program: spec.program,
      filename: spec.filename,
      cwd: spec.cwd,
      bindings,
      discardCompletion: spec.discardCompletion,
      ...(spec.display !== undefined ? { display: { colors: spec.display.colors, ...(spec.display.underscore === true ? { underscore: true as const } : {}) } } : {}),
      timeoutMs: spec.timeoutMs,
      cpuTimeMs: spec.cpuTimeMs,
      signal,
      ...(options.onOutput ? { onOutput: options.onOutput } : {}),
      ...(options.onYield ? { onYield: options.onYield } : {}),
      nextAttachmentId: () => `img-${++this.#attachments}`,
      runId,
      approval: { ...this.#config.approval, grants, ...(options.onApproval !== undefined ? { handler: approvalHandler(options.onApproval) } : {}) },
      ...(recorded !== undefined ? { journal: recorded } : {}),
    };
  }
}
