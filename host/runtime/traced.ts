// A run inside its OpenTelemetry span (docs/traces.md): the span starts before the run is admitted
// and ends with what its result says; with tracing off (no @opentelemetry/api) the run is the same
// call with nothing around it.
import type { RunResult } from '../execution/owners.ts';
import { parseTraceparent, startRunTrace, type RunTrace, type TraceContext } from '../execution/tracing.ts';
import { show, type ResolvedConfig } from './config.ts';
import type { RunOptions } from './request.ts';

/** The caller's trace context among a run's options, checked; throws naming the bad value. */
export function traceContextOf(options: RunOptions, what: string): TraceContext | undefined {
  const { traceparent, tracestate } = options;
  if (traceparent === undefined) {
    if (tracestate !== undefined) throw new TypeError(`${what}: tracestate goes with a traceparent, and none was given (tracestate ${show(tracestate)})`);
    return undefined;
  }
  parseTraceparent(traceparent, what);
  if (tracestate !== undefined && typeof tracestate !== 'string') throw new TypeError(`${what}: tracestate must be a string, got ${show(tracestate)}`);
  return { traceparent, ...(tracestate !== undefined ? { tracestate } : {}) };
}

/**
 * Runs `execute` in the run's span, when tracing is on, and ends the span with its result.
 * `execute` is called in this turn, with nothing awaited first: the run claims its owner at once.
 */
export function traced(
  config: ResolvedConfig,
  run: { runId: string; resumed: boolean; context: TraceContext | undefined },
  execute: (trace: RunTrace | undefined) => Promise<RunResult>,
): Promise<RunResult> {
  const attributes = { 'ptc.run.id': run.runId, 'ptc.run.mode': config.executionMode, ...(run.resumed ? { 'ptc.run.resumed': true } : {}) };
  const trace = startRunTrace(attributes, run.context);
  if (trace === undefined) return execute(undefined);
  const started = execute(trace);
  return started.then(
    (result) => {
      trace.end({ status: result.status, warm: result.warm, sandbox: result.sandbox, ...(result.status === 'failed' ? { failure: result.failure } : {}) });
      return result;
    },
    (error: unknown) => {
      trace.fail(error);
      throw error;
    },
  );
}
