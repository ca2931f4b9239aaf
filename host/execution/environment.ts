// One carrier process and the runs it serves. A temporary environment serves one run and is
// terminated; a retained one (an owner's) keeps its process, context and declarations between
// runs. Each run gets a deadline, cancellation, binding dispatch and an output ledger; the first
// reason to stop is kept, so a timeout stays a timeout even when the kill that follows ends the
// process. Stopping a retained run is cooperative first (revoke, then stopGraceMs), a kill after.
import { resolve as resolvePath } from 'node:path';
import type { JsonValue } from '../../wire/json.ts';
import { decodeJsonAsync } from '../../wire/decode.ts';
import type { FileIdentity, ImageDescriptor, InvokeResult, OutputMessage, ProgramFormat, RunOutcome } from '../../wire/messages.ts';
import { bindingFailure, decodeArguments, encodeResult, type BindingFunction } from './bindings.ts';
import type { ResolvedConfig } from './settings.ts';
import { abortFailure, exceptionFailure, protocolFailure, timeoutFailure, type Failure } from './failures.ts';
import { readImageSize } from '../../wire/image-size.ts';
import { OutputLedger, fittingPrefix, type OutputEntry } from './output-ledger.ts';
import { stripTypes } from './typescript.ts';
import { discardedExpressionHint } from './completion-hint.ts';
import { awaitApproval, isGated, type ApprovalSetup } from './approval.ts';
import { startDeadline } from './deadline.ts';
import { STEP, type RunJournal } from './journal/replay.ts';
import { encodeJson } from '../../wire/json.ts';
import { isDenial, type SandboxSetup } from '../sandbox/index.ts';
import type { Carrier } from '../worker/carrier.ts';
import { cpuMessage, type CpuEnforcement, type CpuOverrun, type DiskEnforcement, type MemoryEnforcement, type OverLimit, type ResourceLimits, type TaskEnforcement } from '../../supervision/resources/guard.ts';


/** The reason a run's `ended` signal is aborted with: nothing reads it. */
const RUN_ENDED = 'the run ended';

/** The confinement a run had, and whether the program met a denial (independent of its outcome). */
export interface SandboxReport extends SandboxSetup {
  denied: boolean;
  /** What bounds the memory of the carrier's process tree (maxMemoryMb): none when nothing does. */
  memory: MemoryEnforcement;
  /** What bounds the number of tasks (threads and processes) of the carrier's process tree: the kernel (cgroup pids.max), the /proc watchdog, or nothing. */
  tasks: TaskEnforcement;
  /** What counts the run's CPU time against cpuTimeMs: the kernel (the cgroup's total, every task that ran), the /proc watchdog, or none without a budget. */
  cpu: CpuEnforcement;
  /** What bounds the disk use of the carrier's process tree (maxDiskMb): none when nothing does. */
  disk: DiskEnforcement;
}

/** What a retained run says about the environment it ran in. */
export interface EnvironmentReport {
  /** True when this run started a new environment (first run, or after the last one was lost). */
  fresh: boolean;
  /** Why the previous environment was replaced, when it was. */
  replaced?: string;
}

/** Fields of every result. */
interface RunFacts {
  output: OutputEntry[];
  sandbox: SandboxReport;
  environment?: EnvironmentReport;
  /**
   * True when the run waited for no carrier to boot: it took a booted carrier from the warm pool,
   * or ran in its owner's live environment. False when it started a carrier (or none at all).
   */
  warm: boolean;
}

export type RunResult =
  | ({ status: 'ok'; /** The journal's name for the run, in a runtime with a journal. */ runId?: string; value?: JsonValue; /** Why a per-call run returned nothing, when its last expression was discarded. */ hint?: string; /** The completion as text, for a run with `display`. */ display?: string } & RunFacts)
  | ({ status: 'failed'; failure: Failure; runId?: string } & RunFacts);

export interface Execution {
  /** Program source in erasable TypeScript. */
  program: string;
  filename: string;
  cwd: string;
  bindings: Map<string, BindingFunction>;
  discardCompletion: boolean;
  display?: { colors: boolean };
  timeoutMs: number | null;
  /** CPU budget of this run, ms of the whole process tree; null for none. */
  cpuTimeMs: number | null;
  signal?: AbortSignal;
  onOutput?: (entry: OutputEntry) => void;
  nextAttachmentId(): string;
  /** Names the run in pending actions (and in the journal). */
  runId: string;
  approval?: ApprovalSetup;
  /** Records the run's calls; on a resume, answers the calls it already holds. */
  journal?: RunJournal;
}

/** The hooks of the run in progress; between runs the environment is idle. */
interface RunHooks {
  invoke(name: string, args: string): Promise<InvokeResult>;
  output(entry: OutputMessage): void;
  initialized(): boolean;
  stdio(text: string): void;
  exited(code: number | null, signal: NodeJS.Signals | null, message?: string): void;
  protocol(message: string): void;
  started(): void;
}

const UNCONFINED: SandboxSetup = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true };
const CONTROL_LOST = 'the carrier closed its control channel before the program finished';

export class Environment {
  readonly carrier: Carrier;
  readonly format: ProgramFormat;
  readonly retained: boolean;
  readonly report: SandboxSetup;
  readonly #config: ResolvedConfig;
  readonly #resources: ResourceLimits;
  readonly #disk: DiskEnforcement;
  /** Images registered with this process; they stay valid while it lives (the reference's rule). */
  readonly #images = new Map<string, ImageDescriptor>();
  #hooks: RunHooks | undefined;
  #connected = false;
  #exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #lost: string | undefined;
  #terminated: Promise<void> | undefined;
  /** Whether a run was sent to a carrier that its relay had already killed while idle (see limits). */
  #unreached = false;
  /** Whether the environment initializer has run (retained environments only). */
  initialized = false;
  /** Whether the next run waits for no boot: a booted carrier from the pool, or one that has served a run. */
  #warm: boolean;

  constructor(carrier: Carrier, config: ResolvedConfig, format: ProgramFormat, retained: boolean, report: SandboxSetup, warm = false) {
    this.carrier = carrier;
    this.#warm = warm;
    this.report = report;
    this.#config = config;
    this.format = format;
    this.retained = retained;
    // Before the carrier's first run, so the cgroup holds everything the program will start. Over
    // the memory limit the watchdog kills the tree; the exit that follows says why (overLimit).
    // An idle environment is lost at that moment, so a run that starts before the exit arrives
    // does not land in a dying process.
    // A remote carrier's tree is on its machine: its relay watches the disk (and the rest) there.
    const remote = report.location === 'remote';
    const limits = { maxMemoryMb: config.maxMemoryMb, maxDiskMb: remote ? null : config.maxDiskMb, writable: carrier.writable };
    // A relay far away may find the tree over its limit while idle after this host has sent the
    // next run (beforeRun): that run never reached the carrier, and its owner runs it in a fresh one.
    this.#resources = carrier.connection.limits(limits, (beforeRun) => {
      if (!this.#hooks) return this.#loseIdle(`${this.#resources.overLimit()!.message} while idle`);
      if (beforeRun === true) {
        this.#lost ??= `${this.#resources.overLimit()!.message} while idle`;
        this.#unreached = true;
      }
      carrier.connection.kill();
    });
    this.#disk = remote ? (config.maxDiskMb === null ? 'none' : 'watchdog') : this.#resources.disk;
    carrier.attach({
      onProtocolError: (message, betweenRuns) => (this.#hooks && !betweenRuns ? this.#hooks.protocol(message) : this.#loseIdle(`protocol failure while idle: ${message}`)),
      onSpawnError: (message) => {
        this.#exit = { code: null, signal: null };
        this.#lost = message;
        this.#hooks?.exited(null, null, message);
      },
      onExit: (code, signal) => {
        this.#exit = { code, signal };
        if (this.#hooks) this.#hooks.exited(code, signal);
        else this.#lost ??= idle(this.#overLimit()) ?? (carrier.connection.lost !== undefined ? `${carrier.connection.lost} while idle` : `its process ${describeHow(code, signal)} while idle${tail(carrier.stderrTail)}`);
      },
      // Idle stdout is discarded; stderr is kept by the carrier as the bounded tail.
      onStdio: (text) => this.#hooks?.stdio(text),
      onControlLost: () => (this.#hooks ? this.#hooks.protocol(CONTROL_LOST) : this.#loseIdle('its control channel closed while idle')),
    });
  }

  /** Why this environment can no longer run programs, or undefined while it can. */
  get lost(): string | undefined {
    return this.#lost ?? (this.#exit !== undefined ? `its process ${describeHow(this.#exit.code, this.#exit.signal)}` : undefined);
  }

  /** Kills the process group and waits for the pipes (idempotent); `afterResult`: see Carrier.terminate. */
  terminate(afterResult = false): Promise<void> {
    this.#terminated ??= this.carrier.terminate(this.#config.graceMs, afterResult).then(() => this.#resources.release());
    return this.#terminated;
  }

  #loseIdle(reason: string): void {
    this.#lost ??= reason;
    void this.terminate();
  }

  #connect(): void {
    if (this.#connected) return;
    this.#connected = true;
    const refuse = (): never => {
      throw Object.assign(new Error('no evaluation is running'), { code: 'PTC_EVALUATION_ENDED' });
    };
    this.carrier.connect({
      invoke: (name, args) => (this.#hooks ? this.#hooks.invoke(name, args) : refuse()),
      // The carrier has opened the file under its sandbox; the host reads only that same inode.
      registerImage: (path, identity, pixels) => {
        if (!this.#hooks) return refuse();
        // A remote carrier's file is on its machine: its path means a file there, and the size is
        // the one the carrier read under its sandbox (the host has nothing to read it from).
        if (this.report.location === 'remote') return Promise.resolve(this.#addImage(path, pixels));
        return this.#registerImage(path, '/', 'Image.fromFile', identity);
      },
      initialized: async () => this.#hooks?.initialized() ?? false,
      output: (entry) => this.#hooks?.output(entry),
      started: () => this.#hooks?.started(),
    });
  }

  async #registerImage(path: string, cwd: string, caller: string, identity?: FileIdentity): Promise<ImageDescriptor> {
    const absolute = resolvePath(cwd, path);
    return this.#addImage(absolute, await readImageSize(absolute, identity, caller));
  }

  #addImage(path: string, { width, height }: { width: number; height: number }): ImageDescriptor {
    const descriptor = { attachmentId: this.#nextAttachmentId(), path, width, height };
    this.#images.set(descriptor.attachmentId, descriptor);
    return descriptor;
  }

  #nextAttachmentId: () => string = () => 'img';

  /**
   * Runs one program. Resolves with the result and whether the environment can serve another run;
   * a temporary environment is terminated before this resolves, a lost retained one too.
   */
  /** `unreached`: the run never reached the carrier, which was lost while idle (`lost` says why);
   * the caller may run it again in a fresh environment. */
  async run(execution: Execution, initializer?: string): Promise<{ result: RunResult; usable: boolean; unreached?: true }> {
    const config = this.#config;
    const ledger = new OutputLedger(config.maxOutputBytes);
    const sandbox: SandboxReport = { ...this.report, denied: false, memory: this.#resources.memory, tasks: this.#resources.tasks, cpu: execution.cpuTimeMs === null ? 'none' : this.#resources.cpu, disk: this.#disk };
    const warm = this.#warm;
    this.#warm = true;
    const failed = (failure: Failure, ledger: OutputLedger, sandbox: SandboxReport): RunResult => ({ ...failedResult(failure, ledger, sandbox), warm });
    this.#nextAttachmentId = execution.nextAttachmentId;
    if (execution.signal?.aborted) {
      if (!this.retained) await this.terminate();
      return { result: failed(abortFailure(execution.signal.reason), ledger, sandbox), usable: this.retained && this.lost === undefined };
    }
    // Stripping types overlaps the carrier's start-up: the first strip in a process loads Node's
    // TypeScript parser, which takes about as long as a carrier takes to boot. A program that does
    // not parse never reaches the carrier, so a retained environment is untouched by it.
    const stripped = stripTypes(execution.program, execution.filename, this.format);
    if (!stripped.ok) {
      if (!this.retained) await this.terminate();
      return { result: failed(exceptionFailure(stripped.error), ledger, sandbox), usable: this.retained && this.lost === undefined };
    }

    let failure: Failure | undefined;
    let settled = false;
    let codeStarted = false;
    let initializing = initializer !== undefined;
    let outcome: RunOutcome | undefined;
    let stopRun!: () => void;
    const stopped = new Promise<void>((resolve) => {
      stopRun = resolve;
    });
    // Fires when the run ends, so a call waiting for approval stops waiting. Aborted with a reason
    // of its own: without one, abort() builds a DOMException (and its stack) on every run.
    const ended = new AbortController();
    const stop = (reason: Failure): void => {
      failure ??= reason;
      settled = true;
      ended.abort(RUN_ENDED);
      stopRun();
    };

    // The caller's listener must not be able to break the run; its failure is its own.
    const emit = (entry: OutputEntry): void => {
      try {
        execution.onOutput?.(entry);
      } catch {
        // Ignored: the entry is still in the result.
      }
    };
    const addText = (text: string): void => {
      if (!sandbox.denied && isDenial(text)) sandbox.denied = true;
      const kept = ledger.addText(text);
      if (kept !== undefined) emit({ type: 'text', text: kept });
      if (ledger.overflowed) stop(outputLimit(config.maxOutputBytes));
    };

    const journal = execution.journal;
    const diverge = (match: { message: string; position: number; expected: { binding: string; args: string }; actual: { binding: string; args: string } }): never => {
      stop({ kind: 'divergence', message: match.message, position: match.position, expected: match.expected, actual: match.actual });
      throw Object.assign(new Error(match.message), { code: 'PTC_DIVERGED' });
    };
    // The answer a journaled call had, given again: its value and images, or its error.
    const replayed = async (name: string, stored: { result: string | null; error: string | null }): Promise<InvokeResult> => {
      if (stored.error !== null) {
        const { message, code } = JSON.parse(stored.error) as { message: string; code?: string };
        throw Object.assign(new Error(message), code !== undefined ? { code } : {});
      }
      const { value, images } = JSON.parse(stored.result!) as { value: string | null; images: Array<{ at: Array<string | number>; path: string }> };
      const placed = [];
      for (const { at, path } of images) placed.push({ at, image: await this.#registerImage(path, execution.cwd, `${name}: image()`) });
      return { ...(value !== null ? { value } : {}), images: placed };
    };
    const errorText = (error: unknown): string => {
      const failure = bindingFailure(error);
      const code = (failure as { code?: unknown }).code;
      return JSON.stringify({ message: failure.message, ...(typeof code === 'string' ? { code } : {}) });
    };
    // step(name, fn): [name] asks for the journaled value; [name, value] records the one fn made.
    const steps = new Map<string, number>();
    const step = async (argsText: string): Promise<InvokeResult> => {
      const args = await decodeArguments(argsText);
      if (typeof args[0] !== 'string' || args.length < 1 || args.length > 2) throw Object.assign(new Error('step(name, fn): name must be a string'), { code: 'PTC_STEP' });
      if (args.length === 1) {
        const match = journal!.match(STEP, argsText);
        if (match.kind === 'diverged') diverge(match);
        if (match.kind === 'answered') {
          const { value } = JSON.parse(match.call.result!) as { value: string };
          return { value: `{"recorded":true,"value":${value}}`, images: [] };
        }
        if (match.kind === 'run') steps.set(argsText, match.sequence);
        return { value: '{"recorded":false}', images: [] };
      }
      const key = encodeJson([args[0]], 'step');
      const sequence = steps.get(key);
      if (sequence === undefined) throw Object.assign(new Error(`step ${JSON.stringify(args[0])}: recorded without being asked for`), { code: 'PTC_STEP' });
      steps.delete(key);
      journal!.record(sequence, STEP, key, 'done', JSON.stringify({ value: encodeJson(args[1], 'value'), images: [] }));
      return { images: [] };
    };

    let pendingCalls = 0;
    let pendingBytes = 0;
    let sequence = 0;
    // The carrier declares only this run's bindings and enforces both in-flight limits before it
    // sends a call (the host counts a call until its reply is written, the carrier until it is
    // read), so a call past them did not come from the carrier's own code: the run fails.
    const invoke = async (name: string, argsText: string): Promise<InvokeResult> => {
      const binding = execution.bindings.get(name);
      const bytes = Buffer.byteLength(argsText);
      let problem: string | undefined;
      if (binding === undefined && !(name === STEP && journal !== undefined)) problem = `the carrier called ${JSON.stringify(name)}, which is not a binding of this run`;
      else if (pendingCalls >= config.maxPendingCalls) problem = `the carrier made more than maxPendingCalls (${config.maxPendingCalls}) binding calls at once`;
      else if (pendingBytes + bytes > config.maxMessageBytes) problem = `the carrier's binding calls in flight carry more than maxMessageBytes (${config.maxMessageBytes} bytes) of arguments`;
      if (problem !== undefined) {
        stop(protocolFailure(`invalid control message: ${problem}`));
        throw Object.assign(new Error(problem), { code: 'PTC_PROTOCOL' });
      }
      pendingCalls++;
      pendingBytes += bytes;
      let position = ++sequence;
      try {
        if (name === STEP) return await step(argsText);
        if (journal !== undefined) {
          const match = journal.match(name, argsText);
          if (match.kind === 'answered') return await replayed(name, match.call);
          if (match.kind === 'diverged') diverge(match);
          if (match.kind === 'run') position = match.sequence;
        }
        const args = await decodeArguments(argsText);
        if (isGated(execution.approval, binding!, { binding: name, args })) {
          journal?.record(position, name, argsText, 'waiting');
          journal?.status('waiting');
          try {
            await awaitApproval(execution.approval, { runId: execution.runId, sequence: position, binding: name, args }, deadline.hold, ended.signal);
          } catch (error) {
            // A decision (or its timeout) is journaled; a call whose run ended still waits for one.
            if ((error as { code?: string }).code !== 'PTC_EVALUATION_ENDED') journal?.record(position, name, argsText, 'rejected', null, errorText(error));
            throw error;
          }
          journal?.status('running');
        }
        journal?.record(position, name, argsText, 'started');
        let encoded: InvokeResult;
        try {
          const result = await binding!(...args);
          if (settled) throw Object.assign(new Error(`${name}: the evaluation has ended`), { code: 'PTC_EVALUATION_ENDED' });
          encoded = await encodeResult(name, result, (path) => this.#registerImage(path, execution.cwd, `${name}: image()`));
          const resultBytes = encoded.value === undefined ? 0 : Buffer.byteLength(encoded.value);
          if (resultBytes > config.maxMessageBytes) {
            throw Object.assign(new Error(`${name}: the result (${resultBytes} bytes of JSON) is larger than one control message (maxMessageBytes ${config.maxMessageBytes})`), { code: 'PTC_MESSAGE_LIMIT' });
          }
        } catch (error) {
          journal?.record(position, name, argsText, 'failed', null, errorText(error));
          throw error;
        }
        // Committed before the program hears the answer: an answer it acted on is never lost.
        journal?.record(position, name, argsText, 'done', JSON.stringify({ value: encoded.value ?? null, images: encoded.images.map(({ at, image }) => ({ at, path: image.path })) }));
        return encoded;
      } catch (error) {
        throw bindingFailure(error);
      } finally {
        pendingCalls--;
        pendingBytes -= bytes;
      }
    };

    this.#hooks = {
      invoke: (name, args) => {
        if (settled) return Promise.reject(Object.assign(new Error(`${name}: the evaluation has ended`), { code: 'PTC_EVALUATION_ENDED' }));
        return invoke(name, args);
      },
      output: (entry) => {
        if (settled) return;
        if (entry.type === 'text') return addText(entry.text);
        const image = this.#images.get(entry.attachmentId);
        if (image === undefined) return stop(protocolFailure(`invalid control message: unknown image attachment ${JSON.stringify(entry.attachmentId)}`));
        if (ledger.addImage(image)) emit({ type: 'image', ...image });
        else stop(outputLimit(config.maxOutputBytes));
      },
      // The host accepts initialization only while the first run is still wanted.
      initialized: () => {
        if (settled) return false;
        initializing = false;
        this.initialized = true;
        return true;
      },
      stdio: (text) => {
        if (!settled || failure === undefined) addText(text);
      },
      exited: (code, signal, message = '') => {
        if (!settled) stop({ kind: 'worker-exit', message, exitCode: code, signal });
      },
      protocol: (message) => stop(message === CONTROL_LOST ? { kind: 'worker-exit', message, exitCode: null, signal: null } : protocolFailure(message)),
      started: () => resources?.started?.(),
    };
    if (this.lost !== undefined) stop({ kind: 'worker-exit', message: `the environment is gone: ${this.lost}`, exitCode: this.#exit?.code ?? null, signal: this.#exit?.signal ?? null });

    const deadline = startDeadline(execution.timeoutMs, () => stop(timeoutFailure(execution.timeoutMs!, codeStarted)));
    const onAbort = (): void => stop(abortFailure(execution.signal!.reason));
    execution.signal?.addEventListener('abort', onAbort, { once: true });

    // The CPU budget counts from the carrier's `started` notice (the run's own code starting):
    // start-up, the handshake and the carrier's set-up for the run are not the program's.
    let resources: ReturnType<ResourceLimits['watch']> | undefined;
    const overrun = (over: CpuOverrun): void => {
      // Killed at once: a hot loop cannot take a cooperative stop, and a busy child would outlive one.
      this.carrier.connection.kill();
      stop(overrunFailure(over));
    };
    const running = (async () => {
      await this.carrier.handshake();
      // A remote carrier's relay has said by now what bounds its memory there.
      sandbox.memory = this.#resources.memory;
      sandbox.tasks = this.#resources.tasks;
      if (execution.cpuTimeMs !== null) sandbox.cpu = this.#resources.cpu;
      // An allowlist's proxy must be listening before the program can reach for the network.
      const proxyProblem = await this.carrier.network?.begin();
      if (proxyProblem !== undefined) return stop({ kind: 'sandbox-unavailable', message: proxyProblem });
      if (settled) return;
      this.#connect();
      codeStarted = true;
      resources = this.#resources.watch(execution.cpuTimeMs, overrun);
      const result = await this.carrier.run({
        format: this.format,
        retain: this.retained,
        program: stripped.code,
        ...(initializer !== undefined ? { initializer } : {}),
        filename: execution.filename,
        cwd: execution.cwd,
        bindings: journal !== undefined ? [...execution.bindings.keys(), STEP] : [...execution.bindings.keys()],
        discardCompletion: execution.discardCompletion,
        ...(execution.display !== undefined ? { display: execution.display } : {}),
        maxPendingCalls: config.maxPendingCalls,
        maxMessageBytes: config.maxMessageBytes,
        maxOutputBytes: config.maxOutputBytes,
        announceStart: resources.started !== undefined,
        ...(config.imports !== undefined ? { imports: config.imports } : {}),
      });
      outcome = result;
      if (!settled) {
        settled = true;
        stopRun();
      }
    })();
    running.catch(() => {});

    await stopped;
    const late = failure === undefined ? resources?.check() : undefined;
    if (late !== undefined) overrun(late);
    // A fill that finished between two samples of the disk watch, or a limit the kernel kept
    // since the last look at its events, is caught here, before an ok.
    if (failure === undefined && this.#resources.checkLimits()) {
      const over = this.#resources.overLimit()!;
      stop({ kind: 'worker-exit', exitCode: null, signal: null, ...over });
    }
    resources?.stop();
    deadline.clear();
    ended.abort(RUN_ENDED);
    execution.signal?.removeEventListener('abort', onAbort);
    // Read before a per-call carrier is terminated, which stops its proxy.
    if (this.carrier.network !== undefined) {
      sandbox.network = this.carrier.network.report();
      if (sandbox.network.denied.length > 0) sandbox.denied = true;
    }

    let usable = this.retained;
    if (failure !== undefined && this.retained) {
      // A CPU overrun has killed the tree already (see overrun()).
      const stoppable = ((failure.kind === 'timeout' && failure.cpuTimeMs === undefined) || failure.kind === 'abort') && codeStarted && !initializing;
      const preserved = stoppable && this.lost === undefined && (await this.#revoke(running));
      failure.state = preserved ? 'preserved' : 'cleared';
      usable = preserved;
    }
    this.#hooks = undefined;
    if (!usable || outcome?.status === 'exception' && outcome.initializer) {
      usable = false;
      // A temporary run that completed needs nothing more from its process: what it and its
      // children wrote before the completion was taken from the pipes with it, and the carrier
      // halted when it replied. The kill goes out once the caller has the result; it, the wait for
      // the exit, the pipes and the cleanup stay off the result's path, and dispose() waits for
      // them. Any other end waits here: its exit status may be the diagnostic.
      if (!this.retained && failure === undefined) void this.terminate(true);
      else await this.terminate();
    }

    // A denial shows in what the run reports: its output (scanned as it arrived), the error it
    // failed with, or the value it returned (a program that caught the error and handed it back).
    const reported = failure ?? (outcome?.status === 'exception' ? outcome.error : undefined);
    if (reported !== undefined && [reported.code, reported.message].some(isDenial)) sandbox.denied = true;
    if (outcome?.status === 'ok' && isDenial(outcome.value)) sandbox.denied = true;
    if (outcome?.denied === true) sandbox.denied = true;

    let result: RunResult;
    if (failure !== undefined) {
      const exit = this.#exit;
      if (failure.kind === 'worker-exit' && exit !== undefined && failure.message === '') {
        Object.assign(failure, describeExit(exit.code, exit.signal, this.carrier.stderrTail));
        const over = this.#overLimit();
        if (over !== undefined) Object.assign(failure, over);
        else if (this.carrier.connection.lost !== undefined) failure.message = this.carrier.connection.lost;
      } else if (failure.message === CONTROL_LOST && exit !== undefined) {
        // The transport diagnostic stays; the exit status is what was observed after the kill.
        Object.assign(failure, { exitCode: exit.code, signal: exit.signal, stderrTail: this.carrier.stderrTail });
      }
      if (this.retained && failure.state === undefined) failure.state = 'cleared';
      result = failed(failure, ledger, sandbox);
    } else {
      result = await complete(outcome!, ledger, sandbox, config, warm);
      if (result.status === 'ok' && result.value === undefined && this.format === 'async-function' && !execution.discardCompletion) {
        const hint = discardedExpressionHint(stripped.code);
        if (hint !== undefined) result.hint = hint;
      }
      if (result.status === 'failed' && result.failure.kind === 'output-limit' && this.retained) {
        result.failure.state = 'cleared';
        usable = false;
        await this.terminate();
      }
    }
    return this.#unreached ? { result, usable: false, unreached: true } : { result, usable };
  }

  /** Why the tree died for a limit: this host's watch, or the relay's for a remote carrier. */
  #overLimit(): OverLimit | undefined {
    const remote = this.carrier.connection.overLimit?.();
    if (remote !== undefined) return { message: remote, maxDiskMb: this.#config.maxDiskMb! };
    return this.#resources.overLimit();
  }

  /** Asks the carrier to stop the run; true when it acknowledged within stopGraceMs. */
  async #revoke(running: Promise<void>): Promise<boolean> {
    this.carrier.revoke();
    let timer: NodeJS.Timeout | undefined;
    const acknowledged = await Promise.race([
      running.then(() => true, () => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), this.#config.stopGraceMs);
      }),
    ]);
    clearTimeout(timer);
    return acknowledged && this.lost === undefined;
  }
}

async function complete(outcome: RunOutcome, ledger: OutputLedger, sandbox: SandboxReport, config: ResolvedConfig, warm: boolean): Promise<RunResult> {
  const limit = config.maxOutputBytes;
  const failed = (failure: Failure, ledger: OutputLedger, sandbox: SandboxReport): RunResult => ({ ...failedResult(failure, ledger, sandbox), warm });
  switch (outcome.status) {
    case 'ok': {
      if (outcome.display !== undefined) {
        if (!ledger.charge(Buffer.byteLength(outcome.display))) return failed(outputLimit(limit, 'the completion value'), ledger, sandbox);
        return { status: 'ok', display: outcome.display, output: ledger.entries, sandbox, warm };
      }
      if (outcome.value === undefined) return { status: 'ok', output: ledger.entries, sandbox, warm };
      if (!ledger.charge(Buffer.byteLength(outcome.value))) return failed(outputLimit(limit, 'the completion value'), ledger, sandbox);
      let value: JsonValue;
      try {
        value = await decodeJsonAsync(outcome.value);
      } catch (error) {
        return failed(protocolFailure(`the carrier sent an unparsable completion: ${(error as Error).message}`), ledger, sandbox);
      }
      return { status: 'ok', value, output: ledger.entries, sandbox, warm };
    }
    case 'oversized':
      ledger.charge(Number.MAX_SAFE_INTEGER);
      return failed({
        kind: 'output-limit',
        message: `the completion value (${outcome.bytes} bytes) does not fit maxOutputBytes (${limit}) or one control message (maxMessageBytes ${config.maxMessageBytes}); the output that fit is kept`,
      }, ledger, sandbox);
    case 'invalid-output': {
      const failure: Failure = { kind: 'invalid-output', message: outcome.message, path: outcome.path };
      if (outcome.truncated === true) failure.truncated = true;
      fitDiagnostic(failure, ledger, ['message', 'path']);
      return failed(failure, ledger, sandbox);
    }
    case 'stopped':
      return failed(protocolFailure('the carrier reported a stop nobody asked for'), ledger, sandbox);
    case 'exception': {
      const failure = exceptionFailure(outcome.error);
      if (outcome.initializer) failure.message = `the environment initializer failed: ${failure.message}`;
      if (outcome.truncated === true) failure.truncated = true;
      fitDiagnostic(failure, ledger);
      return failed(failure, ledger, sandbox);
    }
  }
}

// The diagnostic shares the output budget; what does not fit is cut, later fields first (the
// stack, the path), rather than lose the exception or the invalid value behind an output-limit;
// a failure that lost anything says so (`truncated`).
function fitDiagnostic(failure: Failure, ledger: OutputLedger, fields: Array<'message' | 'stack' | 'path'> = ['message', 'stack']): void {
  let budget = ledger.remaining;
  let used = 0;
  for (const field of fields) {
    const text = failure[field];
    if (text === undefined) continue;
    const kept = fittingPrefix(text, budget);
    if (kept !== text) failure.truncated = true;
    failure[field] = kept;
    const bytes = Buffer.byteLength(kept);
    budget -= bytes;
    used += bytes;
  }
  ledger.charge(used);
}

function overrunFailure(over: CpuOverrun): Failure {
  return { kind: 'timeout', message: cpuMessage(over.usedMs, over.budgetMs), cpuTimeMs: over.budgetMs, cpuUsedMs: over.usedMs };
}

function idle(over: { message: string } | undefined): string | undefined {
  return over === undefined ? undefined : `${over.message} while idle`;
}

function outputLimit(limit: number, what = 'captured output'): Failure {
  return { kind: 'output-limit', message: `${what} exceeded maxOutputBytes (${limit} bytes); the output that fit is kept` };
}

function describeHow(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
}

function tail(stderrTail: string): string {
  const text = stderrTail.trim();
  return text === '' ? '' : ` (stderr: ${text.slice(-500)})`;
}

function describeExit(code: number | null, signal: NodeJS.Signals | null, stderrTail: string): Partial<Failure> {
  const heap = /heap out of memory|Reached heap limit/.test(stderrTail) ? ' after reaching its heap limit (maxOldGenerationSizeMb)' : '';
  return { message: `the carrier ${describeHow(code, signal)}${heap} before the program finished`, exitCode: code, signal, stderrTail };
}

/** The result of a run whose signal was aborted before it was admitted: no process is started. */
export function abortedBeforeStart(reason: unknown): RunResult {
  return { status: 'failed', failure: abortFailure(reason), output: [], sandbox: { ...UNCONFINED, denied: false, memory: 'none', tasks: 'none', cpu: 'none', disk: 'none' }, warm: false };
}

/** The result of a run whose required confinement cannot be had: it never runs unconfined. */
export function sandboxUnavailable(message: string, report: SandboxSetup): RunResult {
  return { status: 'failed', failure: { kind: 'sandbox-unavailable', message }, output: [], sandbox: { ...report, denied: false, memory: 'none', tasks: 'none', cpu: 'none', disk: 'none' }, warm: false };
}

function failedResult(failure: Failure, ledger: OutputLedger, sandbox: SandboxReport): Omit<Extract<RunResult, { status: 'failed' }>, 'warm'> {
  return { status: 'failed', failure, output: ledger.entries, sandbox };
}
