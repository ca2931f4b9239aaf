// The carrier's evaluation loop: adopt the control channel, install program globals, then run one
// program per `run` request. Per-call carriers run exactly one; the host ends the process after.
import { types } from 'node:util';
import { openChannel, type HostLink } from './channel.ts';
import { scrubEnvironment } from './environment.ts';
import { beginOutput, captureStandardStreams, endOutput, inspect } from './output.ts';
import { BindingError, installBindings } from './bindings.ts';
import { Image, setImageRegistrar } from './image.ts';
import { describeSyntaxError, describeThrown } from './errors.ts';
import { compileAsyncFunction } from './evaluators/async-function.ts';
import { encodeJson, LossyValueError } from './protocol/json.ts';
import type { RunOutcome, RunRequest } from './protocol/messages.ts';

interface ActiveRun {
  settle(outcome: RunOutcome): void;
  filename: string;
}

let active: ActiveRun | undefined;
// Captured before any program runs: a program that replaces Promise.prototype.then must not be able
// to keep its own completion from reaching the host.
const promiseThen = Promise.prototype.then;
const NativePromise = Promise;
const { setPrototypeOf } = Object;
const byteLength = Buffer.byteLength;
/** Room for the reply envelope around a completion value in one frame. */
const FRAME_OVERHEAD = 1024;

/** Starts the carrier: called once, before any program code exists in this process. */
export function runCarrier(): void {
  scrubEnvironment();
  silenceLoaderWarning();
  process.on('uncaughtException', (error) => failActiveRun(error));
  process.on('unhandledRejection', (reason) => failActiveRun(reason));
  captureStandardStreams();
  defineGlobal('inspect', inspect);
  defineGlobal('Image', Image);
  defineGlobal('BindingError', BindingError);

  const channel = openChannel({ run: (request) => evaluate(request, channel.host) }, ['async-function', 'images']);
  setImageRegistrar(async (path) => {
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

// The program's first dynamic import makes Node warn that vm.USE_MAIN_CONTEXT_DEFAULT_LOADER (the
// evaluator's import hook) is experimental; that is the runtime's choice, not program output.
function silenceLoaderWarning(): void {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && text.includes('vm.USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
    return Reflect.apply(emitWarning, process, [warning, ...rest]);
  } as typeof process.emitWarning;
}

function defineGlobal(name: string, value: unknown): void {
  Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
}

/** An uncaught callback error fails the evaluation that is running; with none running it is dropped. */
function failActiveRun(thrown: unknown): void {
  active?.settle({ status: 'exception', error: describeThrown(thrown, active.filename) });
}

// Not an async function: returning `outcome` from one would resolve through `outcome.then`, which
// the program may have replaced. birpc awaits this native promise without looking up `then`.
function evaluate(request: RunRequest, host: HostLink): Promise<RunOutcome> {
  let resolveOutcome!: (outcome: RunOutcome) => void;
  const outcome = new NativePromise<RunOutcome>((resolve) => {
    resolveOutcome = resolve;
  });
  if (active !== undefined) {
    resolveOutcome({ status: 'exception', error: { name: 'Error', message: 'another evaluation is running' } });
    return outcome;
  }
  process.chdir(request.cwd);
  let settled = false;
  const run: ActiveRun = {
    filename: request.filename,
    settle(result) {
      if (settled) return;
      settled = true;
      active = undefined;
      endOutput();
      uninstall();
      // A null prototype keeps a program's Object.prototype.then from adopting the outcome.
      resolveOutcome(setPrototypeOf(result, null));
    },
  };
  active = run;
  beginOutput(host.output, request.maxOutputBytes, request.maxMessageBytes);
  const uninstall = installBindings(
    request.bindings,
    { active: () => !settled, invoke: host.invoke },
    request,
  );

  let program: () => Promise<unknown>;
  try {
    program = compileAsyncFunction(request.program, request.filename);
  } catch (error) {
    run.settle({ status: 'exception', error: describeSyntaxError(error, request.filename) });
    return outcome;
  }
  Reflect.apply(promiseThen, program(), [
    (value: unknown) => run.settle(completion(value, request)),
    (error: unknown) => run.settle({ status: 'exception', error: describeThrown(error, request.filename) }),
  ]);
  return outcome;
}

function completion(value: unknown, request: RunRequest): RunOutcome {
  if (request.discardCompletion || value === undefined) return { status: 'ok' };
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
