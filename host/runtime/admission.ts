// Execution glue: a completed spec and the caller's options become the one Execution the
// executor runs, with the runtime's own abort (dispose() stops every run in progress), its
// attachment ids and its approval settings.
import type { BindingFunction } from '../execution/bindings.ts';
import { Executor, type Execution, type RunResult } from '../execution/owners.ts';
import type { RunJournal } from '../execution/journal/replay.ts';
import type { ResolvedConfig } from './config.ts';
import { approvalHandler, type CompleteSpec, type RunOptions } from './request.ts';

export class Admission {
  readonly #executor: Executor;
  readonly #config: ResolvedConfig;
  readonly #active = new Set<AbortController>();
  #attachments = 0;
  /** Whether a run has been admitted (environment initializers must be registered before). */
  admitted = false;

  constructor(executor: Executor, config: ResolvedConfig) {
    this.#executor = executor;
    this.#config = config;
  }

  /** Runs one spec with its flattened bindings; `recorded` journals its calls. */
  async execute(spec: CompleteSpec, bindings: Map<string, BindingFunction>, options: RunOptions, runId: string, recorded?: RunJournal): Promise<RunResult> {
    const controller = new AbortController();
    this.#active.add(controller);
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    this.admitted = true;
    try {
      return await this.#executor.run(this.#execution(spec, bindings, options, signal, runId, recorded), spec);
    } finally {
      this.#active.delete(controller);
    }
  }

  /** Aborts every run in progress. */
  abortAll(reason: Error): void {
    for (const controller of this.#active) controller.abort(reason);
  }

  #execution(spec: CompleteSpec, bindings: Map<string, BindingFunction>, options: RunOptions, signal: AbortSignal, runId: string, recorded: RunJournal | undefined): Execution {
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
      nextAttachmentId: () => `img-${++this.#attachments}`,
      runId,
      approval: { ...this.#config.approval, ...(options.onApproval !== undefined ? { handler: approvalHandler(options.onApproval) } : {}) },
      ...(recorded !== undefined ? { journal: recorded } : {}),
    };
  }
}
