// One carrier process and the runs it serves. A temporary environment serves one run and is
// terminated; a retained one (an owner's) keeps its process, context and declarations between
// runs. Each run gets a deadline, cancellation, binding dispatch and an output ledger; the first
// reason to stop is kept, so a timeout stays a timeout even when the kill that follows ends the
// process. Stopping a retained run is cooperative first (revoke, then stopGraceMs), a kill after.
import { resolve as resolvePath } from 'node:path';
import type { FileIdentity, ImageDescriptor, InvokeResult, OutputMessage, ProgramFormat, RunOutcome } from '../../wire/messages.ts';
import type { ResolvedConfig } from './settings.ts';
import { abortFailure, exceptionFailure, protocolFailure, type Failure } from './failures.ts';
import { readImageSize } from '../../wire/image-size.ts';
import { OutputLedger } from './output-ledger.ts';
import { stripTypes } from './typescript.ts';
import { discardedExpressionHint } from './completion-hint.ts';
import type { SandboxSetup } from '../sandbox/index.ts';
import type { Carrier } from '../worker/carrier.ts';
import { retirement } from '../worker/pool.ts';
import type { DiskEnforcement, OverLimit, ResourceLimits } from '../../supervision/resources/guard.ts';
import { carrierRequest, type Execution } from './run/execution.ts';
import { RunState } from './run/state.ts';
import { armDeadline, ResourceWatch } from './run/stops.ts';
import { runOutput, type RunOutput } from './run/output.ts';
import { dispatcher } from './run/dispatch.ts';
import { reportDenials, reportNetwork } from './run/report.ts';
import { endAfterOutputLimit, endUnlessUsable, survivesFailure } from './run/retention.ts';
import { CONTROL_LOST, completedResult, describeExit, describeHow, failedResult, idle, stderrNote, type RunResult, type SandboxReport } from './run/outcome.ts';

/** The hooks of the run in progress; between runs the environment is idle. */
interface RunHooks {
  invoke(name: string, args: string): Promise<InvokeResult>;
  output(entry: OutputMessage): void;
  initialized(): boolean;
  stdio(text: string, stream: 'stdout' | 'stderr'): void;
  exited(code: number | null, signal: NodeJS.Signals | null, message?: string): void;
  protocol(message: string): void;
  started(): void;
  yielded(): void;
}

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
  /** A per-call carrier's kill waiting for no run to be in flight. */
  #retiring: { ready: Promise<void>; now(): void } | undefined;
  /** Whether a run was sent to a carrier that its relay had already killed while idle (see limits). */
  #unreached = false;
  /** Whether the environment initializer has run (retained environments only). */
  initialized = false;
  /** Whether the next run waits for no boot: a booted carrier from the pool, or one that has served a run. */
  #warm: boolean;

  /** Told once when a retained environment is lost while idle, before anything of ptc's own ended it. */
  readonly #onIdleLoss: ((reason: string) => void) | undefined;

  constructor(carrier: Carrier, config: ResolvedConfig, format: ProgramFormat, retained: boolean, report: SandboxSetup, warm = false, onIdleLoss?: (reason: string) => void) {
    this.#onIdleLoss = onIdleLoss;
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
        else this.#noteIdleLoss(idle(this.#overLimit()) ?? (carrier.connection.lost !== undefined ? `${carrier.connection.lost} while idle` : `its process ${describeHow(code, signal)} while idle${stderrNote(carrier.stderrTail)}`));
      },
      // Idle stdout is discarded; stderr is kept by the carrier as the bounded tail.
      onStdio: (text, stream) => this.#hooks?.stdio(text, stream),
      onControlLost: () => (this.#hooks ? this.#hooks.protocol(CONTROL_LOST) : this.#loseIdle('its control channel closed while idle')),
    });
  }

  /** Why this environment can no longer run programs, or undefined while it can. */
  get lost(): string | undefined {
    return this.#lost ?? (this.#exit !== undefined ? `its process ${describeHow(this.#exit.code, this.#exit.signal)}` : undefined);
  }

  /** Kills the process group and waits for the pipes (idempotent). `afterResult`: a per-call run's caller has its result, and the kill waits for no run to be in flight (retirement() in pool.ts; hurry() ends the wait). */
  terminate(afterResult = false): Promise<void> {
    if (this.#terminated === undefined) {
      if (afterResult) this.#retiring = retirement();
      this.#terminated = this.carrier.terminate(this.#config.graceMs, this.#retiring?.ready).then(() => this.#resources.release());
    }
    return this.#terminated;
  }

  /** Sends a kill that waits for no run to be in flight (terminate(true)) at once: for dispose(). */
  hurry(): void {
    this.#retiring?.now();
  }

  #loseIdle(reason: string): void {
    this.#noteIdleLoss(reason);
    void this.terminate();
  }

  /** The first reason this environment is lost while idle; a retained one's owner hears of it (the runtime's onDiagnostic) unless ptc itself was ending it. */
  #noteIdleLoss(reason: string): void {
    if (this.#lost !== undefined) return;
    this.#lost = reason;
    if (this.retained && this.#terminated === undefined) this.#onIdleLoss?.(reason);
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
      yieldControl: () => this.#hooks?.yielded(),
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
   * `unreached`: the run never reached the carrier, which was lost while idle (`lost` says why);
   * the caller may run it again in a fresh environment.
   */
  async run(execution: Execution, initializer?: string): Promise<{ result: RunResult; usable: boolean; unreached?: true }> {
    const ledger = new OutputLedger(this.#config.maxOutputBytes);
    const sandbox: SandboxReport = { ...this.report, denied: false, memory: this.#resources.memory, tasks: this.#resources.tasks, cpu: execution.cpuTimeMs === null ? 'none' : this.#resources.cpu, disk: this.#disk };
    const warm = this.#warm;
    this.#warm = true;
    this.#nextAttachmentId = execution.nextAttachmentId;
    if (execution.signal?.aborted) return this.#refuse(abortFailure(execution.signal.reason), ledger, sandbox, warm);
    // Stripping types overlaps the carrier's start-up: the first strip in a process loads Node's
    // TypeScript parser, which takes about as long as a carrier takes to boot. A program that does
    // not parse never reaches the carrier, so a retained environment is untouched by it.
    const stripped = stripTypes(execution.program, execution.filename, this.format);
    if (!stripped.ok) return this.#refuse(exceptionFailure(stripped.error), ledger, sandbox, warm);

    const state = new RunState(initializer !== undefined);
    const { deadline, disarm } = armDeadline(execution, state);
    const resources = new ResourceWatch(this.#resources, () => this.carrier.connection.kill(), state);
    const output = runOutput(execution, ledger, sandbox, state, this.#images);
    const invoke = dispatcher({ execution, config: this.#config, state, deadline, registerImage: (path, caller) => this.#registerImage(path, execution.cwd, caller) });
    this.#hooks = this.#runHooks(state, invoke, output, resources, execution.onYield);
    if (this.lost !== undefined) state.stop({ kind: 'worker-exit', message: `the environment is gone: ${this.lost}`, exitCode: this.#exit?.code ?? null, signal: this.#exit?.signal ?? null });

    let outcome: RunOutcome | undefined;
    const running = this.#send(execution, stripped.code, initializer, state, resources, sandbox, warm).then((reply) => {
      outcome = reply;
      if (reply !== undefined) state.complete();
    });
    running.catch(() => {});
    await state.stopped;

    resources.settle(outcome?.cpuMs);
    disarm();
    state.end();
    execution.trace?.sampleAfter(this.#localPid());
    reportNetwork(this.carrier.network, sandbox);
    let usable = await survivesFailure(this, state, running, this.#config.stopGraceMs);
    this.#hooks = undefined;
    usable = await endUnlessUsable(this, usable, state, outcome);
    reportDenials(sandbox, state.failure, outcome);

    let result: RunResult;
    if (state.failure !== undefined) {
      result = failedResult(this.#explainEnd(state.failure), ledger, sandbox, warm);
    } else {
      result = await completedResult(outcome!, ledger, sandbox, this.#config, warm);
      if (result.status === 'ok' && result.value === undefined && this.format === 'async-function' && !execution.discardCompletion) {
        const hint = discardedExpressionHint(stripped.code);
        if (hint !== undefined) result.hint = hint;
      }
      if (!(await endAfterOutputLimit(this, result))) usable = false;
    }
    return this.#unreached ? { result, usable: false, unreached: true } : { result, usable };
  }

  /** Sends the run to the carrier once it is ready for it; resolves with its reply, or undefined when the run stopped first. */
  async #send(execution: Execution, program: string, initializer: string | undefined, state: RunState, resources: ResourceWatch, sandbox: SandboxReport, warm: boolean): Promise<RunOutcome | undefined> {
    await this.#boot(execution, warm);
    // A remote carrier's relay has said by now what bounds its memory there.
    sandbox.memory = this.#resources.memory;
    sandbox.tasks = this.#resources.tasks;
    if (execution.cpuTimeMs !== null) sandbox.cpu = this.#resources.cpu;
    // An allowlist's proxy must be listening before the program can reach for the network.
    const proxyProblem = await this.carrier.network?.begin();
    if (proxyProblem !== undefined) return void state.stop({ kind: 'sandbox-unavailable', message: proxyProblem });
    if (state.settled) return undefined;
    this.#connect();
    state.codeStarted = true;
    execution.trace?.sampleBefore(this.#localPid());
    const announceStart = resources.start(execution.cpuTimeMs);
    return this.carrier.run(carrierRequest(execution, { format: this.format, retain: this.retained, program, initializer, announceStart }, this.#config));
  }

  /** Waits for the carrier's handshake; for a run that did not find it booted, that wait is the boot's span. */
  async #boot(execution: Execution, warm: boolean): Promise<void> {
    const span = warm ? undefined : execution.trace?.step('ptc.carrier.boot', { 'ptc.sandbox.backend': this.report.backend, ...(this.report.location !== undefined ? { 'ptc.carrier.location': this.report.location } : {}) });
    try {
      await this.carrier.handshake();
    } catch (error) {
      span?.fail(error);
      throw error;
    }
    span?.end();
  }

  /** The carrier's pid when its process tree is on this machine, where /proc shows its usage. */
  #localPid(): number | undefined {
    return this.report.location === 'remote' ? undefined : this.carrier.pid;
  }

  /** A run that never reaches the carrier: aborted before it began, or a program that does not parse. */
  async #refuse(failure: Failure, ledger: OutputLedger, sandbox: SandboxReport, warm: boolean): Promise<{ result: RunResult; usable: boolean }> {
    if (!this.retained) await this.terminate();
    return { result: failedResult(failure, ledger, sandbox, warm), usable: this.retained && this.lost === undefined };
  }

  /** Routes the carrier's events to the run in progress. */
  #runHooks(state: RunState, invoke: RunHooks['invoke'], output: RunOutput, resources: ResourceWatch, onYield: (() => void) | undefined): RunHooks {
    return {
      invoke,
      output: (entry) => output.message(entry),
      // The host accepts initialization only while the first run is still wanted.
      initialized: () => {
        if (state.settled) return false;
        state.initializing = false;
        this.initialized = true;
        return true;
      },
      stdio: (text, stream) => {
        if (!state.settled || state.failure === undefined) output.text(text, stream);
      },
      exited: (code, signal, message = '') => {
        if (!state.settled) state.stop({ kind: 'worker-exit', message, exitCode: code, signal });
      },
      protocol: (message) => state.stop(message === CONTROL_LOST ? { kind: 'worker-exit', message, exitCode: null, signal: null } : protocolFailure(message)),
      started: () => resources.started(),
      yielded: () => {
        if (!state.settled) onYield?.();
      },
    };
  }

  /** Completes a failure with what was seen of the carrier's end: its exit, the limit it crossed, its stderr. */
  #explainEnd(failure: Failure): Failure {
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
    return failure;
  }

  /** Why the tree died for a limit: this host's watch, or the relay's for a remote carrier. */
  #overLimit(): OverLimit | undefined {
    const remote = this.carrier.connection.overLimit?.();
    if (remote !== undefined) return { message: remote, maxDiskMb: this.#config.maxDiskMb! };
    return this.#resources.overLimit();
  }
}
