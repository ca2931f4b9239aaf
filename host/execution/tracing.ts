// OpenTelemetry spans of runs, through the user's own `@opentelemetry/api` (an optional peer
// dependency, loaded on the first run): a span per run, a child per binding call, approval wait
// and carrier boot, joined to the caller's trace (the active context, or a W3C traceparent the
// front end was handed). Without the package nothing here does anything; without an SDK the API
// hands out non-recording spans and the run skips what only a recording span would use (the
// /proc reads of the carrier's usage). The types below are the slice of the API this file uses,
// so the library's declarations name no package its users may not have.
import { createRequire } from 'node:module';
import { procAvailable, treeUsage, type TreeUsage } from '../../supervision/resources/proc.ts';

declare const PTC_BUILD: unknown;

type AttributeValue = string | number | boolean;
type Attributes = Record<string, AttributeValue>;

/** The API's opaque context. */
type OtelContext = object;

interface OtelSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
  traceState?: unknown;
}

interface OtelSpan {
  setAttribute(key: string, value: AttributeValue): unknown;
  setAttributes(attributes: Attributes): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  isRecording(): boolean;
  end(): void;
}

interface OtelTracer {
  startSpan(name: string, options: { attributes?: Attributes; kind?: number }, context: OtelContext): OtelSpan;
}

/** The slice of `@opentelemetry/api` ptc uses. */
export interface TracingApi {
  ROOT_CONTEXT: OtelContext;
  context: { active(): OtelContext; with<T>(context: OtelContext, fn: () => T): T };
  trace: {
    getTracer(name: string, version?: string): OtelTracer;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
    setSpanContext(context: OtelContext, spanContext: OtelSpanContext): OtelContext;
  };
  createTraceState?(raw: string): unknown;
}

/** SpanStatusCode.ERROR of the API: a constant of the W3C/OTel data model, not of one version. */
const STATUS_ERROR = 2;
/** SpanKind.INTERNAL: a run is work inside the caller's process, not a request of its own. */
const KIND_INTERNAL = 0;

/** The instrumentation scope spans are created under. */
export const TRACER_NAME = 'ptc';

/** A W3C trace context as a front end receives it: the `traceparent` header and its `tracestate`. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** The API once looked for: the module, or null when it cannot be had. */
let loaded: TracingApi | null | undefined;

/**
 * The API, loaded once, or undefined when it cannot be: not installed, or the single binary, which
 * carries no copy of it (its bundle keeps the require out, build/build.ts) and whose process no
 * user can register an SDK in. Loaded with require, synchronously: a run must reach its owner in
 * the turn it was called (a release() called right after run() waits for that run), so nothing
 * before the run may await. The package's CommonJS build and its ESM build share one registry
 * (a global keyed by the API's major version), so the SDK a host registers is found either way.
 */
export function tracingApi(): TracingApi | undefined {
  if (loaded === undefined) {
    try {
      loaded = typeof PTC_BUILD !== 'undefined' ? null : (createRequire(import.meta.url)('@opentelemetry/api') as TracingApi);
    } catch {
      loaded = null;
    }
  }
  return loaded ?? undefined;
}

/** Replaces the loaded API (undefined: tracing off, as without the package); for the tests and the bench that compare both. */
export function useTracingApi(api: TracingApi | undefined): void {
  loaded = api ?? null;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Checks a W3C traceparent (version 00, or a later one read as 00 as the spec says) and returns
 * its parts; throws naming `what` and the value when it is not one.
 */
export function parseTraceparent(value: unknown, what: string): { traceId: string; spanId: string; traceFlags: number } {
  const bad = (why: string): never => {
    throw new TypeError(`${what}: traceparent ${why}, got ${JSON.stringify(value)}`);
  };
  if (typeof value !== 'string') return bad('must be a string of the W3C form 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>');
  const match = TRACEPARENT.exec(value);
  if (match === null) return bad('must be of the W3C form 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags> (lowercase hex)');
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff') bad('has the invalid version ff');
  if (version === '00' && rest !== undefined) bad('of version 00 has nothing after its flags');
  if (/^0+$/.test(traceId)) bad('has an all-zero trace id');
  if (/^0+$/.test(spanId)) bad('has an all-zero parent id');
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

/** Checks a trace context's fields (and that it names no others); throws naming `what` and the value. */
export function checkTraceContext(value: unknown, what: string): TraceContext {
  if (typeof value !== 'object' || value === null) throw new TypeError(`${what}: must be an object with traceparent (and tracestate), got ${JSON.stringify(value)}`);
  const { traceparent, tracestate, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw new TypeError(`${what}: unknown field "${extra}" (a trace context has traceparent and tracestate)`);
  parseTraceparent(traceparent, what);
  if (tracestate !== undefined && typeof tracestate !== 'string') throw new TypeError(`${what}: tracestate must be a string, got ${JSON.stringify(tracestate)}`);
  return { traceparent: traceparent as string, ...(tracestate !== undefined ? { tracestate } : {}) };
}

/** The parent context of a run: the caller's trace context when one was handed over, else the active one. */
function parentContext(api: TracingApi, given: TraceContext | undefined): OtelContext {
  if (given === undefined) return api.context.active();
  const parent = parseTraceparent(given.traceparent, 'trace context');
  const traceState = given.tracestate !== undefined && given.tracestate !== '' ? api.createTraceState?.(given.tracestate) : undefined;
  return api.trace.setSpanContext(api.ROOT_CONTEXT, { ...parent, isRemote: true, ...(traceState !== undefined ? { traceState } : {}) });
}

/** One step of a run inside its span (a binding call, an approval wait, a carrier boot). */
export interface StepSpan {
  /** Runs `fn` (a binding) with the step's span as the active context, so spans it makes nest under it. */
  within<T>(fn: () => T): T;
  /** Ends the step; a failure (a kind and message) marks it as one. */
  end(attributes?: Attributes, failure?: { kind: string; message?: string }): void;
  /** Ends the step as failed by what was thrown, read only when the step is recorded (a program's binding may throw anything). */
  fail(thrown: unknown, attributes?: Attributes): void;
}

/** What a run's result tells its span. */
export interface RunEnding {
  status: 'ok' | 'failed';
  failure?: { kind: string; message: string };
  warm: boolean;
  sandbox: { backend: string; mode: string; location?: string };
}

/**
 * The span of one run and the steps below it. `recording` is false without an SDK (or when its
 * sampler dropped the run): the run then measures nothing for it.
 */
export class RunTrace {
  readonly recording: boolean;
  readonly #api: TracingApi;
  readonly #tracer: OtelTracer;
  readonly #span: OtelSpan;
  readonly #context: OtelContext;
  /** The carrier's tree as /proc showed it when the run's code started and when the run ended. */
  #usage: { before: TreeUsage; after?: TreeUsage } | undefined;

  constructor(api: TracingApi, attributes: Attributes, given: TraceContext | undefined) {
    this.#api = api;
    this.#tracer = api.trace.getTracer(TRACER_NAME);
    const parent = parentContext(api, given);
    this.#span = this.#tracer.startSpan('ptc.run', { kind: KIND_INTERNAL, attributes }, parent);
    this.#context = api.trace.setSpan(parent, this.#span);
    this.recording = this.#span.isRecording();
  }

  /**
   * Starts a step below the run. An unrecorded run has no steps, but its bindings still run in its
   * context, so what they call carries the caller's trace id onward.
   */
  step(name: string, attributes: Attributes): StepSpan {
    const api = this.#api;
    if (!this.recording) return { within: (fn) => api.context.with(this.#context, fn), end() {}, fail() {} };
    const span = this.#tracer.startSpan(name, { kind: KIND_INTERNAL, attributes }, this.#context);
    const context = api.trace.setSpan(this.#context, span);
    const end = (more?: Attributes, failure?: { kind: string; message?: string }): void => {
      if (more !== undefined) span.setAttributes(more);
      if (failure !== undefined) markFailed(span, failure);
      span.end();
    };
    return { within: (fn) => api.context.with(context, fn), end, fail: (thrown, more) => end(more, thrownFailure(thrown)) };
  }

  /** Samples the carrier's tree when its run starts (local carriers with /proc, recorded runs only). */
  sampleBefore(pid: number | undefined): void {
    if (!this.recording || pid === undefined || !procAvailable()) return;
    this.#usage = { before: treeUsage(pid) };
  }

  /** Samples the tree again when the run has ended, before a per-call carrier is terminated. */
  sampleAfter(pid: number | undefined): void {
    if (this.#usage === undefined || pid === undefined) return;
    this.#usage.after = treeUsage(pid);
  }

  /** Ends the run's span with what its result says. */
  end(result: RunEnding): void {
    const attributes: Attributes = {
      'ptc.run.status': result.status,
      'ptc.carrier.warm': result.warm,
      'ptc.sandbox.backend': result.sandbox.backend,
      'ptc.sandbox.mode': result.sandbox.mode,
    };
    if (result.sandbox.location !== undefined) attributes['ptc.carrier.location'] = result.sandbox.location;
    const usage = this.#usage;
    if (usage?.after !== undefined && usage.after.processes > 0) {
      attributes['ptc.carrier.cpu_time_ms'] = Math.max(0, Math.round(usage.after.cpuMs - usage.before.cpuMs));
      attributes['ptc.carrier.memory.rss_bytes'] = usage.after.rssBytes;
    }
    this.#span.setAttributes(attributes);
    if (result.failure !== undefined) markFailed(this.#span, result.failure);
    this.#span.end();
  }

  /** Ends the span of a run that threw (misuse the runtime names) instead of returning a result. */
  fail(error: unknown): void {
    markFailed(this.#span, thrownFailure(error));
    this.#span.end();
  }
}

/** A thrown value as a failure: its code as the kind (or "error"), and its message; a value whose reading throws is described as such. */
function thrownFailure(thrown: unknown): { kind: string; message: string } {
  try {
    const { code, message } = (typeof thrown === 'object' && thrown !== null ? thrown : {}) as { code?: unknown; message?: unknown };
    return { kind: typeof code === 'string' ? code : 'error', message: typeof message === 'string' ? message : String(thrown) };
  } catch {
    return { kind: 'error', message: 'a thrown value that cannot be described' };
  }
}

function markFailed(span: OtelSpan, failure: { kind: string; message?: string }): void {
  span.setAttributes({ 'ptc.failure.kind': failure.kind, 'error.type': failure.kind });
  span.setStatus({ code: STATUS_ERROR, ...(failure.message !== undefined ? { message: failure.message } : {}) });
}

/** The trace of a run about to start, or undefined when tracing is off (no API). */
export function startRunTrace(attributes: Attributes, given: TraceContext | undefined): RunTrace | undefined {
  const api = tracingApi();
  return api === undefined ? undefined : new RunTrace(api, attributes, given);
}
