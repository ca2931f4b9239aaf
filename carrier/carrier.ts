// The carrier's evaluation loop: adopt the control channel, install program globals, then run one
// program per `run` request. A per-call carrier runs exactly one and the host ends it; a retained
// carrier keeps its evaluator (context and declarations) for the owner's next run.
//
// Each run executes inside an AsyncLocalStorage scope. Bindings, output and uncaught errors are
// attributed through it, so callbacks left behind by an ended (or revoked) run can neither call
// bindings nor print into a later run, and their errors do not fail it.
import { AsyncLocalStorage } from 'node:async_hooks';
import * as module from 'node:module';
import { types } from 'node:util';
import vm from 'node:vm';
import { openChannel, type HostLink } from './channel.ts';
import { scrubEnvironment } from './environment.ts';
import { takeDenied, watchDenials } from './denials.ts';
import { beginOutput, captureStandardStreams, endOutput, inspect } from './output.ts';
import { BindingError, installBindings } from './bindings.ts';
import { Image, setImageRegistrar } from './image.ts';
import { describeSyntaxError, describeThrown } from './errors.ts';
import { createEvaluator } from './evaluators/index.ts';
import type { Completion, Evaluator } from './evaluators/types.ts';
import { encodeJson, LossyValueError, trustRealm } from './protocol/json.ts';
import type { InvokeResult, RunOutcome, RunRequest } from './protocol/messages.ts';

/** One run: settles once; a revoke rejects its pending binding calls and silences it. */
interface Run {
  readonly filename: string;
  settled: boolean;
  revoked: boolean;
  /** Rejecters of binding calls in flight, called on revoke. */
  readonly pending: Set<(error: Error) => void>;
  settle(outcome: RunOutcome): void;
}

interface Environment {
  evaluator: Evaluator;
  /** Binding names currently installed on the evaluator's global object, and how to remove them. */
  uninstall: () => void;
}

const scope = new AsyncLocalStorage<Run>();
let active: Run | undefined;
let environment: Environment | undefined;

// Captured before any program runs: a program that replaces these must not be able to keep its own
// completion from reaching the host.
const promiseThen = Promise.prototype.then;
const NativePromise = Promise;
const { setPrototypeOf, defineProperty } = Object;
const { apply } = Reflect;
const byteLength = Buffer.byteLength;
/** Room for the reply envelope around a completion value in one frame. */
const FRAME_OVERHEAD = 1024;

/** Starts the carrier: called once, before any program code exists in this process. */
export function runCarrier(): void {
  scrubEnvironment();
  watchDenials();
  silenceLoaderWarning();
  process.on('uncaughtException', (error) => failCurrentRun(error));
  process.on('unhandledRejection', (reason) => failCurrentRun(reason));
  captureStandardStreams();

  const channel = openChannel(
    { run: (request) => evaluate(request, channel.host), revoke },
    ['async-function', 'vm-script', 'scoped-repl', 'repl', 'images', 'revoke'],
  );
  saveCompileCache();
  setImageRegistrar(async (path) => {
    if (currentRun() === undefined) throw new Error('Image.fromFile: the evaluation that made this call has ended');
    try {
      return await channel.host.registerImage(path);
    } catch (error) {
      // The host's reason arrives as plain data; the program should catch a real Error.
      const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
      const text = typeof message === 'string' ? message : `Image.fromFile failed for ${path}`;
      throw name === 'TypeError' ? new TypeError(text) : new Error(text);
    }
  });
}

// A source carrier compiles its TypeScript through Node's compile cache (NODE_COMPILE_CACHE), which
// is written at exit; carriers end by SIGKILL, so write it as soon as the modules are loaded.
// (The bundled carriers have no cache directory, and Node 20 has no flush: both are no-ops.)
function saveCompileCache(): void {
  (module as { flushCompileCache?: () => void }).flushCompileCache?.();
}

// The program's first dynamic import makes Node warn that vm.USE_MAIN_CONTEXT_DEFAULT_LOADER (the
// evaluators' import hook) is experimental; that is the runtime's choice, not program output.
function silenceLoaderWarning(): void {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && text.includes('vm.USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
    return apply(emitWarning, process, [warning, ...rest]);
  } as typeof process.emitWarning;
}

/** The run the calling code belongs to, when that run is the active one and not revoked. */
function currentRun(): Run | undefined {
  const run = scope.getStore();
  return run !== undefined && run === active && !run.revoked ? run : undefined;
}

/** An uncaught callback error fails the run that created the callback while it is active; otherwise it is dropped. */
function failCurrentRun(thrown: unknown): void {
  const run = scope.getStore();
  if (run !== undefined && run === active) run.settle({ status: 'exception', error: describeThrown(thrown, run.filename) });
}

function revoke(): void {
  const run = active;
  if (run === undefined || run.revoked) return;
  run.revoked = true;
  endOutput();
  for (const reject of run.pending) reject(new BindingError('the evaluation was stopped', 'revoke', 'PTC_REVOKED'));
  run.pending.clear();
}

function defineGlobals(target: Record<string, unknown>): void {
  for (const [name, value] of [['inspect', inspect], ['Image', Image], ['BindingError', BindingError]] as const) {
    defineProperty(target, name, { value, writable: true, configurable: true, enumerable: false });
  }
}

/** The global object of the realm behind an evaluator's global: Node's REPL hands out its contextified sandbox. */
function realmGlobal(globalObject: object): object {
  return vm.isContext(globalObject) ? (vm.runInContext('globalThis', globalObject) as object) : globalObject;
}

/** The environment for this request: the retained one, or a new evaluator. */
async function environmentFor(request: RunRequest): Promise<Environment> {
  if (environment !== undefined) {
    if (environment.evaluator.format !== request.format) {
      throw new Error(`this carrier retains a ${environment.evaluator.format} environment; it cannot run ${request.format} programs`);
    }
    return environment;
  }
  const evaluator = await createEvaluator(request.format);
  saveCompileCache();
  // Before any program runs in it: the realm's plain objects and arrays are lossless data.
  trustRealm(realmGlobal(evaluator.globalObject));
  defineGlobals(evaluator.globalObject);
  const fresh: Environment = { evaluator, uninstall: () => {} };
  if (request.retain) environment = fresh;
  return fresh;
}

// Not an async function: returning `outcome` from one would resolve through `outcome.then`, which
// the program may have replaced. birpc awaits this native promise without looking up `then`.
function evaluate(request: RunRequest, host: HostLink): Promise<RunOutcome> {
  let resolveOutcome!: (outcome: RunOutcome) => void;
  const outcome = new NativePromise<RunOutcome>((resolve) => {
    resolveOutcome = resolve;
  });
  if (active !== undefined) {
    resolveOutcome({ status: 'exception', error: { name: 'Error', message: 'another evaluation is running in this carrier' } });
    return outcome;
  }
  const run: Run = {
    filename: request.filename,
    settled: false,
    revoked: false,
    pending: new Set(),
    settle(result) {
      if (run.settled) return;
      run.settled = true;
      if (active === run) active = undefined;
      endOutput();
      const final: RunOutcome = run.revoked ? { status: 'stopped' } : result;
      if (takeDenied()) final.denied = true;
      // A null prototype keeps a program's Object.prototype.then from adopting the outcome.
      resolveOutcome(setPrototypeOf(final, null));
    },
  };
  active = run;
  takeDenied(); // whatever earlier runs' callbacks met is not this run's
  apply(promiseThen, environmentFor(request), [
    (env: Environment) => {
      if (run.revoked) return run.settle({ status: 'stopped' });
      try {
        process.chdir(request.cwd);
      } catch (error) {
        return run.settle({ status: 'exception', error: describeThrown(error, request.filename) });
      }
      beginOutput(host.output, request.maxOutputBytes, request.maxMessageBytes, () => currentRun() === run);
      env.uninstall();
      env.uninstall = installBindings(
        request.bindings,
        {
          active: () => currentRun() !== undefined,
          invoke: (name, args) => track(currentRun(), host.invoke(name, args)),
        },
        request,
        env.evaluator.globalObject,
      );
      scope.run(run, () => execute(run, env.evaluator, request, host));
    },
    (error: unknown) => run.settle({ status: 'exception', error: describeThrown(error, request.filename) }),
  ]);
  return outcome;
}

/** Inside the run's scope: the initializer when there is one, then the program. */
function execute(run: Run, evaluator: Evaluator, request: RunRequest, host: HostLink): void {
  const started = request.initializer === undefined ? NativePromise.resolve(true) : initialize(evaluator, request, host);
  apply(promiseThen, started, [
    (proceed: boolean) => {
      if (!proceed || run.revoked) return run.settle({ status: 'stopped' });
      apply(promiseThen, start(evaluator, request.program, request), [
        (completion: Completion) => run.settle(completionOutcome(completion.value, request)),
        (error: unknown) => run.settle({ status: 'exception', error: describeError(error, request.filename) }),
      ]);
    },
    (error: unknown) => run.settle({ status: 'exception', error: describeError(error, '[initializer]'), initializer: true }),
  ]);
}

/** Runs the environment initializer, then asks the host whether the program may still start. */
async function initialize(evaluator: Evaluator, request: RunRequest, host: HostLink): Promise<boolean> {
  await start(evaluator, request.initializer!, { ...request, filename: '[initializer]', discardCompletion: true });
  return host.initialized();
}

/** Starts an evaluation; a synchronous compile error becomes a rejection. */
function start(evaluator: Evaluator, program: string, request: RunRequest): Promise<Completion> {
  try {
    return evaluator.evaluate(program, { filename: request.filename, cwd: request.cwd, wantCompletion: !request.discardCompletion });
  } catch (error) {
    return NativePromise.reject(error);
  }
}

/** A binding call of `run` that a revoke can reject while it is still in flight. */
function track(run: Run | undefined, call: Promise<InvokeResult>): Promise<InvokeResult> {
  if (run === undefined) return NativePromise.reject(new BindingError('the evaluation that made this call has ended', 'revoke', 'PTC_EVALUATION_ENDED'));
  return new NativePromise<InvokeResult>((resolve, reject) => {
    run.pending.add(reject);
    apply(promiseThen, call, [
      (value: InvokeResult) => {
        run.pending.delete(reject);
        resolve(value);
      },
      (error: unknown) => {
        run.pending.delete(reject);
        reject(error);
      },
    ]);
  });
}

/** Compile errors keep V8's decorated location; everything else is a thrown value. */
function describeError(error: unknown, filename: string) {
  const stack = types.isNativeError(error) ? String((error as Error).stack ?? '') : '';
  if ((error as Error | undefined)?.name === 'SyntaxError' && stack.startsWith(`${filename}:`)) return describeSyntaxError(error, filename);
  return describeThrown(error, filename);
}

function completionOutcome(value: unknown, request: RunRequest): RunOutcome {
  if (request.discardCompletion || value === undefined) return { status: 'ok' };
  if (types.isPromise(value)) {
    return { status: 'invalid-output', path: 'value', message: 'the completion value is a Promise: REPL results are not awaited, so end with `await <expression>`' };
  }
  try {
    const text = encodeJson(value, 'value', { isProxy: types.isProxy });
    // A value too big for the budget or for one frame is reported by size, not sent.
    const bytes = byteLength(text);
    if (bytes > request.maxOutputBytes || bytes > request.maxMessageBytes - FRAME_OVERHEAD) return { status: 'oversized', bytes };
    return { status: 'ok', value: text };
  } catch (error) {
    if (error instanceof LossyValueError) {
      return { status: 'invalid-output', path: error.path, message: `the completion value is not lossless JSON: ${error.message}` };
    }
    return { status: 'exception', error: describeThrown(error, 'value') };
  }
}
