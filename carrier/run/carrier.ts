// The carrier's evaluation loop (boot/start.ts adopts the channel and starts it): one program per
// `run` request. A per-call carrier runs exactly one and the host ends it; a retained
// carrier keeps its evaluator (context and declarations) for the owner's next run.
//
// Each run executes inside an AsyncLocalStorage scope. Bindings, output and uncaught errors are
// attributed through it, so callbacks left behind by an ended (or revoked) run can neither call
// bindings nor print into a later run, and their errors do not fail it.
import { AsyncLocalStorage } from 'node:async_hooks';
import { writeSync } from 'node:fs';
import * as module from 'node:module';
import { types } from 'node:util';
import vm from 'node:vm';
import type { HostLink } from '../channel/channel.ts';
import { takeDenied, takeHidden } from '../hardening/denials.ts';
import { beginOutput, endOutput, inspect } from '../globals/output.ts';
import { BindingError, bindingCaller, installBindings, type BindingCaller } from '../globals/bindings.ts';
import { Image } from '../globals/image.ts';
import { describeSyntaxError, describeThrown, isDecoratedSyntaxError, trustErrorRealm } from './errors.ts';
import { append, apply, chdir, defineProperty, NativePromise, nextTick, rejected, resolved, SafeSet, setPrototypeOf, then, unthenable } from '../hardening/intrinsics.ts';
import { createEvaluator } from '../evaluators/index.ts';
import { applyImports, importSetup } from '../imports/program-imports.ts';
import type { Completion, Evaluator } from '../evaluators/types.ts';
import { trustRealm } from '../../wire/json.ts';
import { fitOutcome } from './outcome-fit.ts';
import { cancelTrim, trimWhenIdle } from './idle-trim.ts';
import { holdWaitAsync, STALL_MESSAGE, type StallWatch } from '../channel/stall.ts';
import type { InvokeResult, RunOutcome, RunRequest } from '../../wire/messages.ts';
import { completionOutcome } from './completion.ts';
import { runRevoked, runSettling, runStarted } from './interrupt.ts';
import { installUnderscore, type Underscore } from './underscore.ts';
import { completeNames } from './complete.ts';

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
  /** This process's CPU time (µs) when the run announced its start, for RunOutcome.cpuMs. */
  cpuAtStart: number | undefined;
  settle(outcome: RunOutcome): void;
}

// Captured before any program runs: a program may replace process.cpuUsage.
const cpuUsage = process.cpuUsage;
/** This process's CPU time so far, in µs (every thread's, as the kernel counts it for its cgroup). */
const cpuMicros = (): number => {
  const usage = apply(cpuUsage, process, []) as NodeJS.CpuUsage;
  return usage.user + usage.system;
};

interface Environment {
  evaluator: Evaluator;
  /** Binding names currently installed on the evaluator's global object, and how to remove them. */
  uninstall: () => void;
  /** Whether its evaluator was made to consult an import handler (the run carried an import policy). */
  imports: boolean;
  /** `_` and `_error`, once a run asked for them (underscore.ts). */
  underscore: Underscore | undefined;
}

const scope = new AsyncLocalStorage<Run>();
// Captured at load: a program may replace them in this realm.
const reallyExit = (process as unknown as { reallyExit: (code: number) => never }).reallyExit;
const { isExtensible, getOwnPropertyNames } = Object;
// Captured with the other intrinsics (intrinsics.ts): node:async_hooks is importable by programs.
const { getStore, run: runInScope } = AsyncLocalStorage.prototype;
const storeOf = (): Run | undefined => apply(getStore, scope, []) as Run | undefined;
const isPromise = types.isPromise;
let active: Run | undefined;
let environment: Environment | undefined;
/** The host link of the runs, for yieldControl(); one per carrier. */
let linked: HostLink | undefined;
/** A yieldControl notice went this turn: a loop of calls sends one, not a flood. */
let yieldSent = false;
let stalls: StallWatch;

let startInterrupts: (() => void) | undefined;

/** Hands the run loop what starts the interrupt watch (interrupt.ts), which the first retained run starts; boot calls it when the host handed the pipe. */
export function useInterrupts(start: () => void): void {
  startInterrupts = start;
}

/** Hands the run loop the channel's stall watch, which arms for each run; boot calls it once. */
export function useStallWatch(watch: StallWatch): void {
  stalls = watch;
}

// A source carrier compiles its TypeScript through Node's compile cache (NODE_COMPILE_CACHE), which
// is written at exit; carriers end by SIGKILL, so write it as soon as the modules are loaded.
// (The bundled carriers have no cache directory, and Node 20 has no flush: both are no-ops.)
export function saveCompileCache(): void {
  (module as { flushCompileCache?: () => void }).flushCompileCache?.();
}


/** The run the calling code belongs to, when that run is the active one and not revoked. */
export function currentRun(): Run | undefined {
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
export function failCurrentRun(thrown: unknown, thrownByCallback: boolean): void {
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

/** V8 has terminated what the active run was doing (interrupt.ts): it ends as stopped, its environment kept. */
export function interrupted(): void {
  const run = active;
  if (run === undefined) return;
  run.revoked = true;
  run.pending.forEach((reject) => reject(new BindingError('the evaluation was stopped', 'revoke', 'PTC_REVOKED')));
  run.pending.clear();
  run.settle({ status: 'stopped' });
}

/** The names that can follow `path` in the retained environment (complete.ts); none while a run is active or before one. */
export function complete(path: unknown): string[] {
  const env = environment;
  if (env === undefined || active !== undefined) return [];
  const { evaluator } = env;
  return completeNames(
    {
      global: realmGlobal(evaluator.globalObject),
      // Node's REPL hands out its context's sandbox object, whose own names (ptc's globals among
      // them) the realm's global does not list on every Node.
      names: () => {
        const names = evaluator.names?.() ?? [];
        if (vm.isContext(evaluator.globalObject)) {
          const own = getOwnPropertyNames(evaluator.globalObject);
          for (let index = 0; index < own.length; index++) append(names, own[index]!);
        }
        return names;
      },
      lookup: (name) => evaluator.lookup?.(name),
    },
    path,
  );
}

/** Stops the active run at the host's request: its pending calls reject, its output ends. */
export function revoke(): void {
  const run = active;
  if (run === undefined || run.revoked) return;
  run.revoked = true;
  runRevoked();
  endOutput();
  run.pending.forEach((reject) => reject(new BindingError('the evaluation was stopped', 'revoke', 'PTC_REVOKED')));
  run.pending.clear();
}

/** The program's yieldControl(): tells the host to answer a caller waiting on this run now; code of an ended run is ignored. */
function yieldControl(): void {
  if (currentRun() === undefined || yieldSent || linked === undefined) return;
  yieldSent = true;
  linked.yieldControl();
  nextTick(() => {
    yieldSent = false;
  });
}

function defineGlobals(target: Record<string, unknown>): void {
  for (const [name, value] of [['inspect', inspect], ['Image', Image], ['BindingError', BindingError], ['yieldControl', yieldControl]] as const) {
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
  const fresh: Environment = unthenable({ evaluator, uninstall: () => {}, imports: setup !== undefined, underscore: undefined });
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
/** Runs one request once `ready` settles (the network forwarder listening); resolves with its outcome, never rejects. */
export function evaluate(request: RunRequest, host: HostLink, ready: Promise<void>): Promise<RunOutcome> {
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
  linked = host;
  const run: Run = {
    filename: request.filename,
    settled: false,
    revoked: false,
    initializing: false,
    pending: new SafeSet(),
    call: undefined,
    cpuAtStart: undefined,
    settle(result) {
      // First: a termination already on its way settles the run when it has landed (interrupted()).
      if (run.settled || !runSettling()) return;
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
      const hidden = takeHidden();
      if (hidden.length > 0) final.hidden = hidden;
      if (run.cpuAtStart !== undefined) final.cpuMs = (cpuMicros() - run.cpuAtStart) / 1000;
      resolveOutcome(fitOutcome(final, request.maxMessageBytes));
      // A per-call carrier ends now; a retained one idles until the owner's next run.
      if (request.retain) trimWhenIdle();
    },
  };
  active = run;
  cancelTrim();
  if (request.retain && startInterrupts !== undefined) {
    const start = startInterrupts;
    startInterrupts = undefined;
    start();
  }
  // It is the run that cannot finish, not the environment: a retained one stays for the next run.
  stalls.arm(() => run.settle({ status: 'exception', error: { name: 'Error', message: STALL_MESSAGE }, ...(run.initializing ? { initializer: true } : {}) }));
  takeDenied(); // whatever earlier runs' callbacks met is not this run's
  takeHidden();
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
      if (request.retain) runStarted();
      if (request.display?.underscore === true && request.retain) env.underscore ??= installUnderscore(env.evaluator.globalObject);
      apply(runInScope, scope, [run, () => execute(run, env, request, host)]);
    },
    (error: unknown) => run.settle({ status: 'exception', error: describeThrown(error, request.filename) }),
  );
  return outcome;
}

/** Inside the run's scope: the initializer when there is one, then the program. */
function execute(run: Run, env: Environment, request: RunRequest, host: HostLink): void {
  const { evaluator } = env;
  const underscore = request.display?.underscore === true ? env.underscore : undefined;
  if (request.announceStart !== false) {
    run.cpuAtStart = cpuMicros();
    host.started();
  }
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
          underscore?.completed(completion.value);
          const outcome = completionOutcome(completion.value, request);
          if (!isPromise(outcome)) return run.settle(outcome);
          then(outcome, (settled: RunOutcome) => run.settle(settled));
        },
        (error: unknown) => {
          underscore?.threw(error);
          run.settle({ status: 'exception', error: describeError(error, request.filename) });
        },
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

