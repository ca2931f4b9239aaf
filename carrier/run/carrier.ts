// The carrier's evaluation loop: adopt the control channel, install program globals, then run one
// program per `run` request. A per-call carrier runs exactly one and the host ends it; a retained
// carrier keeps its evaluator (context and declarations) for the owner's next run.
//
// Each run executes inside an AsyncLocalStorage scope. Bindings, output and uncaught errors are
// attributed through it, so callbacks left behind by an ended (or revoked) run can neither call
// bindings nor print into a later run, and their errors do not fail it.
import { AsyncLocalStorage } from 'node:async_hooks';
import { writeSync } from 'node:fs';
import * as module from 'node:module';
import { inspect as utilInspect, types } from 'node:util';
import vm from 'node:vm';
import { openChannel, type HostLink } from '../channel/channel.ts';
import { scrubEnvironment } from '../boot/environment.ts';
import { closeInheritedDescriptors } from '../boot/descriptors.ts';
import { NETWORK_SOCKET_ENV } from '../../wire/network.ts';
import { CONTROL_FD } from '../../wire/revision.ts';
import { markDenied, takeDenied, watchDenials } from '../hardening/denials.ts';
import { closePermissionGaps } from '../hardening/permission-gaps.ts';
import { guardProcesses } from '../hardening/process-guard.ts';
import { beginOutput, captureStandardStreams, endOutput, inspect } from '../globals/output.ts';
import { BindingError, bindingCaller, installBindings, type BindingCaller } from '../globals/bindings.ts';
import { Image, setImageRegistrar } from '../globals/image.ts';
import { describeSyntaxError, describeThrown, isDecoratedSyntaxError, trustErrorRealm } from './errors.ts';
import {
  apply, byteLength, chdir, defineProperty, NativePromise, queueTask, rejected, resolved, SafeSet, setPrototypeOf, stringIncludes, then, unthenable,
} from '../hardening/intrinsics.ts';
import { createEvaluator } from '../evaluators/index.ts';
import { applyImports, importSetup } from '../imports/program-imports.ts';
import type { Completion, Evaluator } from '../evaluators/types.ts';
import { encodeJson, LossyValueError, trustRealm } from '../../wire/json.ts';
import { fitOutcome, REPLY_ENVELOPE } from './outcome-fit.ts';
import { cancelTrim, trimWhenIdle } from './idle-trim.ts';
import { holdWaitAsync, STALL_MESSAGE, type StallWatch } from '../channel/stall.ts';
import type { InvokeResult, RunOutcome, RunRequest } from '../../wire/messages.ts';
import { bootMark } from '../../wire/boot-mark.ts';

/** One run: settles once; a revoke rejects its pending binding calls and silences it. */
interface Run {
  readonly filename: string;
  settled: boolean;
  revoked: boolean;
  /** The environment initializer is running, not the program: a stall is the initializer's failure. */
  initializing: boolean;
  /** Rejecters of binding calls in flight, called on revoke. */
  readonly pending: InstanceType<typeof SafeSet<(error: Error) => void>>;
  /** How this run's code calls its bindings; set once the run's environment is ready. */
  call: BindingCaller | undefined;
  settle(outcome: RunOutcome): void;
}

interface Environment {
  evaluator: Evaluator;
  /** Binding names currently installed on the evaluator's global object, and how to remove them. */
  uninstall: () => void;
  /** Whether its evaluator was made to consult an import handler (the run carried an import policy). */
  imports: boolean;
}

const scope = new AsyncLocalStorage<Run>();
// Captured at load: a program may replace them in this realm.
const reallyExit = (process as unknown as { reallyExit: (code: number) => never }).reallyExit;
const { isExtensible } = Object;
// Captured with the other intrinsics (intrinsics.ts): node:async_hooks is importable by programs.
const { getStore, run: runInScope } = AsyncLocalStorage.prototype;
const storeOf = (): Run | undefined => apply(getStore, scope, []) as Run | undefined;
const isPromise = types.isPromise;
let active: Run | undefined;
let environment: Environment | undefined;
let stalls: StallWatch;
/** Settles when the network forwarder listens (at once without an allowlist); runs wait for it. */
let forwarding: Promise<void> = resolved(undefined);

/** Starts the carrier: called once, before any program code exists in this process. */
export function runCarrier(): void {
  bootMark('ptc:carrier');
  // stdin, stdout, stderr and the control channel are ptc's; anything else open is inherited.
  closeInheritedDescriptors([0, 1, 2, CONTROL_FD]);
  forwarding = startNetwork();
  forwarding.catch(() => {});
  scrubEnvironment();
  guardProcesses();
  watchDenials();
  closePermissionGaps(markDenied);
  silenceLoaderWarning();
  process.on('uncaughtException', (error) => failCurrentRun(error, true));
  process.on('unhandledRejection', (reason) => failCurrentRun(reason, false));
  captureStandardStreams();

  const channel = openChannel(
    { run: ownApply((request: RunRequest) => evaluate(request, channel.host, forwarding)), revoke: ownApply(revoke) },
    ['async-function', 'vm-script', 'scoped-repl', 'repl', 'images', 'revoke'],
  );
  stalls = channel.stalls;
  bootMark('ptc:hello');
  setImmediate(() => rehearse(channel));
  holdWaitAsync(globalThis);
  saveCompileCache();
  setImageRegistrar((path, identity, pixels) => {
    if (currentRun() === undefined) return rejected(new Error('Image.fromFile: the evaluation that made this call has ended'));
    return then(channel.host.registerImage(path, identity, pixels), (descriptor) => descriptor, (error: unknown) => {
      // The host's reason arrives as plain data; the program should catch a real Error.
      const { name, message } = (typeof error === 'object' && error !== null ? error : {}) as { name?: unknown; message?: unknown };
      const text = typeof message === 'string' ? message : `Image.fromFile failed for ${path}`;
      throw name === 'TypeError' ? new TypeError(text) : new Error(text);
    });
  });
}

/**
 * Starts the network forwarder when the host set up an allowlist. Only then are its modules loaded:
 * node:tls and node:worker_threads are ~3 MB of every idle carrier's RSS. Runs wait for this
 * promise, so the forwarder (and its fetch guard) is in place before any program.
 */
function startNetwork(): Promise<void> {
  const socketPath = process.env[NETWORK_SOCKET_ENV];
  delete process.env[NETWORK_SOCKET_ENV];
  if (socketPath === undefined || socketPath === '') return resolved(undefined);
  return then(import('../network/forward.ts'), ({ startForwarding }) => startForwarding(socketPath));
}

/** What a rehearsal's host link does with the run's notices and calls: nothing reaches the host. */
const UNHEARD: HostLink = unthenable({
  output: () => {},
  started: () => {},
  initialized: () => resolved(false),
  invoke: () => rejected(new Error('a rehearsal calls no binding')),
  registerImage: () => rejected(new Error('a rehearsal registers no image')),
}) as HostLink;

/**
 * While the carrier waits for its first request, runs a program of its own through the per-call
 * path: frame decoding, the evaluator, the completion's encoding, the reply's frame and MAC. The
 * first run of that code in a process is most of a fresh carrier's run (about 2 ms, against
 * 0.2 ms the second time: V8 compiles each function on its first call), which a pooled carrier
 * otherwise pays while the host waits for its reply. Nothing of it reaches the host, and it leaves
 * nothing a program can see: no binding, no output, no retained environment, the same cwd. It
 * runs only in the first turn after the handshake, and entirely in that turn's microtasks, so a
 * request that arrived first is not held, and none can arrive while it runs.
 */
function rehearse(channel: ReturnType<typeof openChannel>): void {
  if (channel.requested()) return;
  let cwd: string;
  try {
    cwd = process.cwd();
  } catch {
    return; // a cwd removed under the carrier: the first run says so, not this
  }
  const request: RunRequest = {
    format: 'async-function',
    retain: false,
    program: 'return { rehearsal: [1 + 1] }',
    filename: '[rehearsal]',
    cwd,
    bindings: [],
    discardCompletion: false,
    maxPendingCalls: 1,
    maxMessageBytes: 64 * 1024,
    maxOutputBytes: 64 * 1024,
    announceStart: false,
  };
  then(evaluate(request, UNHEARD, resolved(undefined)), (outcome: RunOutcome) => channel.rehearse(outcome), () => {});
}

/**
 * The RPC layer calls a method with `method.apply(rpc, args)`; an own `apply` keeps the next run
 * request working after a program replaced Function.prototype.apply in this realm.
 */
function ownApply<F extends (...args: never[]) => unknown>(method: F): F {
  defineProperty(method, 'apply', {
    __proto__: null,
    value: (thisArg: unknown, args: unknown[]) => apply(method, thisArg, args),
  } as PropertyDescriptor);
  return method;
}

// A source carrier compiles its TypeScript through Node's compile cache (NODE_COMPILE_CACHE), which
// is written at exit; carriers end by SIGKILL, so write it as soon as the modules are loaded.
// (The bundled carriers have no cache directory, and Node 20 has no flush: both are no-ops.)
function saveCompileCache(): void {
  (module as { flushCompileCache?: () => void }).flushCompileCache?.();
}

// The program's first dynamic import makes Node warn that vm.USE_MAIN_CONTEXT_DEFAULT_LOADER (the
// evaluators' import hook) is experimental, and the first module an import handler's decision
// makes that VM Modules are; that is the runtime's choice, not program output.
function silenceLoaderWarning(): void {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && (stringIncludes(text, 'vm.USE_MAIN_CONTEXT_DEFAULT_LOADER') || stringIncludes(text, 'VM Modules is an experimental feature'))) return;
    const args: unknown[] = [warning];
    for (let index = 0; index < rest.length; index++) args[index + 1] = rest[index];
    return apply(emitWarning, process, args);
  } as typeof process.emitWarning;
}

/** The run the calling code belongs to, when that run is the active one and not revoked. */
function currentRun(): Run | undefined {
  const run = storeOf();
  return run !== undefined && run === active && !run.revoked ? run : undefined;
}

/**
 * An uncaught callback error fails the run that created the callback while it is active; otherwise
 * it is dropped, but for one rule of the reference's: in a retained environment, a callback of an
 * ended evaluation that throws a frozen or non-extensible object ends the process, as in Node's
 * REPL (whose error domain cannot mark such a value, and exits with Node's code 7 for a failing
 * uncaught-exception handler). The owner's next run reports the environment as replaced.
 */
function failCurrentRun(thrown: unknown, thrownByCallback: boolean): void {
  const run = storeOf();
  if (run !== undefined && run === active) return run.settle({ status: 'exception', error: describeThrown(thrown, run.filename) });
  // Code of an ended evaluation; or, while none is active, code the carrier cannot name (Node 20
  // loses the async context of a queueMicrotask callback that throws).
  const ended = run !== undefined || active === undefined;
  if (thrownByCallback && ended && environment !== undefined && unmarkable(thrown)) {
    const { name, message } = describeThrown(thrown, run?.filename ?? '');
    writeSync(2, `ptc: ${types.isNativeError(thrown) ? `Uncaught ${name}: ${message}` : message}, thrown by a callback of an evaluation that had ended: a frozen or non-extensible value ends the process, as in Node's REPL\n`);
    reallyExit(7);
  }
}

/** A frozen, sealed or otherwise non-extensible object or function; a Proxy is left alone (asking would run its trap). */
function unmarkable(value: unknown): boolean {
  return ((typeof value === 'object' && value !== null) || typeof value === 'function') && !types.isProxy(value) && !isExtensible(value);
}

function revoke(): void {
  const run = active;
  if (run === undefined || run.revoked) return;
  run.revoked = true;
  endOutput();
  run.pending.forEach((reject) => reject(new BindingError('the evaluation was stopped', 'revoke', 'PTC_REVOKED')));
  run.pending.clear();
}

function defineGlobals(target: Record<string, unknown>): void {
  for (const [name, value] of [['inspect', inspect], ['Image', Image], ['BindingError', BindingError]] as const) {
    defineProperty(target, name, { __proto__: null, value, writable: true, configurable: true, enumerable: false } as PropertyDescriptor);
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
    await applyImports(request.imports, request.bindings, environment.evaluator.globalObject, environment.imports);
    return environment;
  }
  const setup = importSetup(request.format, request.imports, request.retain, { current: currentRun, busy: () => active !== undefined && !active.revoked });
  const evaluator = await createEvaluator(request.format, setup);
  saveCompileCache();
  // Before any program runs in it: the realm's plain objects and arrays are lossless data, and its
  // Error.prepareStackTrace is the program's to set, not to format the carrier's reports with.
  const realm = realmGlobal(evaluator.globalObject);
  trustRealm(realm);
  trustErrorRealm(realm);
  holdWaitAsync(realm);
  defineGlobals(evaluator.globalObject);
  // No prototype: this async function resolves with it, which must not find a program's `then`.
  const fresh: Environment = unthenable({ evaluator, uninstall: () => {}, imports: setup !== undefined });
  try {
    await applyImports(request.imports, request.bindings, evaluator.globalObject, fresh.imports);
  } catch (error) {
    evaluator.dispose();
    throw error;
  }
  if (request.retain) environment = fresh;
  return fresh;
}

// Not an async function: returning `outcome` from one would resolve through `outcome.then`, which
// the program may have replaced; the channel (rpc.ts) settles on this native promise through the captured then.
function evaluate(request: RunRequest, host: HostLink, ready: Promise<void>): Promise<RunOutcome> {
  // The request is decoded data: without a prototype, an absent field (initializer) cannot be
  // supplied by an Object.prototype getter that an earlier program left in this carrier.
  setPrototypeOf(request, null);
  let resolveOutcome!: (outcome: RunOutcome) => void;
  const outcome = new NativePromise<RunOutcome>((resolve) => {
    resolveOutcome = resolve;
  });
  if (active !== undefined) {
    resolveOutcome(unthenable({ status: 'exception', error: { name: 'Error', message: 'another evaluation is running in this carrier' } }));
    return outcome;
  }
  const run: Run = {
    filename: request.filename,
    settled: false,
    revoked: false,
    initializing: false,
    pending: new SafeSet(),
    call: undefined,
    settle(result) {
      if (run.settled) return;
      run.settled = true;
      if (active === run) {
        active = undefined;
        stalls.disarm();
      }
      endOutput();
      // A null prototype keeps a program's Object.prototype.then from adopting the outcome, and
      // its setters from seeing `denied`.
      const final: RunOutcome = unthenable(run.revoked ? { status: 'stopped' } : result);
      if (takeDenied()) final.denied = true;
      resolveOutcome(fitOutcome(final, request.maxMessageBytes));
      // A per-call carrier ends now; a retained one idles until the owner's next run.
      if (request.retain) trimWhenIdle();
    },
  };
  active = run;
  cancelTrim();
  // It is the run that cannot finish, not the environment: a retained one stays for the next run.
  stalls.arm(() => run.settle({ status: 'exception', error: { name: 'Error', message: STALL_MESSAGE }, ...(run.initializing ? { initializer: true } : {}) }));
  takeDenied(); // whatever earlier runs' callbacks met is not this run's
  then(
    then(ready, () => environmentFor(request)),
    (env: Environment) => {
      if (run.revoked) return run.settle({ status: 'stopped' });
      try {
        chdir(request.cwd);
      } catch (error) {
        return run.settle({ status: 'exception', error: describeThrown(error, request.filename) });
      }
      beginOutput(host.output, request.maxOutputBytes, request.maxMessageBytes, () => currentRun() === run);
      run.call = bindingCaller(
        request.bindings,
        {
          active: () => currentRun() === run,
          invoke: (name, args) => track(currentRun(), host.invoke(name, args)),
        },
        request,
      );
      env.uninstall();
      // A proxy calls the bindings of the run its caller belongs to, so one kept from an earlier run
      // calls this run's; code of an ended run (its timers, its promise reactions) has none.
      env.uninstall = installBindings(request.bindings, () => currentRun()?.call, env.evaluator.globalObject);
      apply(runInScope, scope, [run, () => execute(run, env.evaluator, request, host)]);
    },
    (error: unknown) => run.settle({ status: 'exception', error: describeThrown(error, request.filename) }),
  );
  return outcome;
}

/** Inside the run's scope: the initializer when there is one, then the program. */
function execute(run: Run, evaluator: Evaluator, request: RunRequest, host: HostLink): void {
  if (request.announceStart !== false) host.started();
  run.initializing = request.initializer !== undefined;
  const started = request.initializer === undefined ? resolved(true) : initialize(evaluator, request, host);
  then(
    started,
    (proceed: boolean) => {
      run.initializing = false;
      if (!proceed || run.revoked) return run.settle({ status: 'stopped' });
      then(
        start(evaluator, request.program, request),
        (completion: Completion) => {
          const outcome = completionOutcome(completion.value, request);
          if (!isPromise(outcome)) return run.settle(outcome);
          then(outcome, (settled: RunOutcome) => run.settle(settled));
        },
        (error: unknown) => run.settle({ status: 'exception', error: describeError(error, request.filename) }),
      );
    },
    (error: unknown) => run.settle({ status: 'exception', error: describeError(error, '[initializer]'), initializer: true }),
  );
}

/** Runs the environment initializer, then asks the host whether the program may still start. */
function initialize(evaluator: Evaluator, request: RunRequest, host: HostLink): Promise<boolean> {
  const initializer: RunRequest = { __proto__: null, ...request, filename: '[initializer]', discardCompletion: true } as RunRequest;
  return then(start(evaluator, request.initializer!, initializer), () => host.initialized());
}

/** Starts an evaluation; a synchronous compile error becomes a rejection. */
function start(evaluator: Evaluator, program: string, request: RunRequest): Promise<Completion> {
  try {
    return evaluator.evaluate(program, { filename: request.filename, cwd: request.cwd, wantCompletion: !request.discardCompletion });
  } catch (error) {
    return rejected(error);
  }
}

/** A binding call of `run` that a revoke can reject while it is still in flight. */
function track(run: Run | undefined, call: Promise<InvokeResult>): Promise<InvokeResult> {
  if (run === undefined) return rejected(new BindingError('the evaluation that made this call has ended', 'revoke', 'PTC_EVALUATION_ENDED'));
  return new NativePromise<InvokeResult>((resolve, reject) => {
    run.pending.add(reject);
    then(
      call,
      (value: InvokeResult) => {
        run.pending.delete(reject);
        // Decoded data: resolving with it must not consult a program's Object.prototype.then.
        resolve(typeof value === 'object' && value !== null ? unthenable(value) : value);
      },
      (error: unknown) => {
        run.pending.delete(reject);
        reject(error);
      },
    );
  });
}

/** Compile errors keep V8's decorated location; everything else is a thrown value. */
function describeError(error: unknown, filename: string) {
  return isDecoratedSyntaxError(error, `${filename}:`) ? describeSyntaxError(error, filename) : describeThrown(error, filename);
}

function completionOutcome(value: unknown, request: RunRequest): RunOutcome | Promise<RunOutcome> {
  if (request.discardCompletion || value === undefined) return { status: 'ok' };
  if (request.display !== undefined) return displayOutcome(value, request, request.display.colors);
  if (isPromise(value)) {
    return { status: 'invalid-output', path: 'value', message: 'the completion value is a Promise: REPL results are not awaited, so end with `await <expression>`' };
  }
  try {
    const text = encodeJson(value, 'value', { isProxy: types.isProxy });
    // A value too big for the budget or for one frame is reported by size, not sent. Its JSON text
    // travels unescaped beside the frame's envelope, which maxMessageBytes does not count.
    const bytes = byteLength(text);
    if (bytes > request.maxOutputBytes || bytes > request.maxMessageBytes) return { status: 'oversized', bytes };
    return { status: 'ok', value: text };
  } catch (error) {
    if (error instanceof LossyValueError) {
      return { status: 'invalid-output', path: error.path, message: `the completion value is not lossless JSON: ${error.message}` };
    }
    return { status: 'exception', error: describeThrown(error, 'value') };
  }
}

/** The completion as Node's REPL shows it (its writer's options), for a person rather than a program. */
function displayOutcome(value: unknown, request: RunRequest, colors: boolean): RunOutcome | Promise<RunOutcome> {
  if (types.isPromise(value)) return displayPromise(value as Promise<unknown>, request, colors);
  let text: string;
  try {
    text = utilInspect(value, { showProxy: true, colors });
  } catch (error) {
    // A custom inspect method that throws is the program's exception, as in Node's REPL.
    return { status: 'exception', error: describeThrown(error, request.filename) };
  }
  return displayTooLarge(text, request) ?? { status: 'ok', display: text };
}

/**
 * A Promise completion is shown by its state, not through util.inspect of the promise itself: on
 * Node 20 that lists the async-hook symbols on every promise, including the carrier's own run
 * state (AsyncLocalStorage's store). A settled promise's reaction runs before a microtask queued
 * after it, so the state is known one tick later without waiting for a pending promise.
 */
function displayPromise(promise: Promise<unknown>, request: RunRequest, colors: boolean): Promise<RunOutcome> {
  let state: { value: unknown } | { reason: unknown } | undefined;
  then(
    promise,
    (value: unknown) => {
      state = { value };
    },
    (reason: unknown) => {
      state = { reason };
    },
  );
  return new NativePromise((resolve) => {
    queueTask(() => {
      const settled = state;
      if (settled === undefined) return resolve(displayed('<pending>', request));
      const inner = 'value' in settled ? displayOutcome(settled.value, request, colors) : displayOutcome(settled.reason, request, colors);
      const text = (inner as RunOutcome & { display?: string }).display;
      if (text === undefined) return resolve(inner as RunOutcome);
      resolve(displayed('value' in settled ? text : `<rejected> ${text}`, request));
    });
  });
}

/** A display string travels like a completion value: within the output budget and one reply frame. */
function displayTooLarge(text: string, request: RunRequest): RunOutcome | undefined {
  const bytes = byteLength(text);
  if (bytes > request.maxOutputBytes || byteLength(encodeJson(text, 'value')) > request.maxMessageBytes - REPLY_ENVELOPE) return { status: 'oversized', bytes };
  return undefined;
}

function displayed(inner: string, request: RunRequest): RunOutcome {
  const text = inner.includes('\n') ? `Promise {\n  ${inner.replaceAll('\n', '\n  ')}\n}` : `Promise { ${inner} }`;
  return displayTooLarge(text, request) ?? { status: 'ok', display: text };
}
