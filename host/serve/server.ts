// What `ptc serve` does with each method: one runtime for the connection, runs in flight keyed by
// runId, retained owners named by strings, and an orderly close that aborts every run and ends
// every carrier. The runtime is created at `initialize` (with its config) or at the first `run`.
import { availableBackends, bindingPaths, callContext, createRuntime, declarations, DEFAULTS, PROTOCOL_REVISION, toolCatalog, VERSION, type Bindings, type OutputEntry, type RunHandle, type Runtime, type RuntimeConfig, type RunSpec } from '../index.ts';
import type { Connection } from './connection.ts';
import { cancelParams, waitParams, declarationsParams, initializeParams, noParams, releaseParams, runParams, type RunParams } from './params.ts';
import { toolBindings } from './tools.ts';
import { approvalNames, markTools, ServeApprovals } from './approvals.ts';
import { listJournal, resumeParams, type ResumeParams } from './journal.ts';
import type { BindingOptions, ReconcileAnswer, ReconcileContext } from '../index.ts';
import { randomUUID } from 'node:crypto';
import { ErrorCode, RpcError } from './wire.ts';

/** The revision of this JSON-RPC protocol; `initialize` answers it and refuses a client that expects another. */
export const SERVE_PROTOCOL_VERSION = 1;
export const METHODS = ['initialize', 'run', 'wait', 'cancel', 'release', 'declarations', 'approve', 'reject', 'runs', 'calls', 'resume', 'shutdown'];

interface ActiveRun {
  controller: AbortController;
  /** Ids of this run's `invoke` requests still waiting for the client. */
  invokes: Set<number>;
  /** The run's handle once it yielded: `wait` looks at it until the final look. */
  handle?: RunHandle;
}

export class Server {
  readonly #baseConfig: RuntimeConfig;
  readonly #log: (line: string) => void;
  #connection!: Connection;
  #runtime: Runtime | undefined;
  readonly #runs = new Map<string, ActiveRun>();
  /** Owner names and the objects that stand for them in the library; an owner with a run in flight is busy. */
  readonly #owners = new Map<string, object>();
  readonly #busyOwners = new Set<string>();
  #nextRun = 0;
  readonly #approvals = new ServeApprovals();
  #closing: Promise<void> | undefined;
  /** Resolves when `shutdown` asks the connection to stop reading. */
  readonly stopped: Promise<void>;
  #stop!: () => void;

  constructor(baseConfig: RuntimeConfig, log: (line: string) => void) {
    this.#baseConfig = baseConfig;
    this.#log = log;
    this.stopped = new Promise((resolve) => (this.#stop = resolve));
  }

  attach(connection: Connection): void {
    this.#connection = connection;
  }

  /** The frame limit: the runtime's maxMessageBytes, one limit for every message of the connection. */
  maxLineBytes(): number {
    return this.#runtime?.config.maxMessageBytes ?? this.#baseConfig.maxMessageBytes ?? DEFAULTS.maxMessageBytes;
  }

  async handle(method: string, params: Record<string, unknown>): Promise<unknown> {
    switch (method) {
      case 'initialize':
        return this.#initialize(params);
      case 'run':
        return this.#run(params);
      case 'wait': {
        const { runId, timeoutMs } = waitParams(params);
        const handle = this.#runs.get(runId)?.handle;
        if (handle === undefined) throw new RpcError(ErrorCode.invalidParams, `wait: no yielded run ${JSON.stringify(runId)} is in flight (a run is waited on after its run request answered status "running", until a look answers its final result)`);
        return handle.wait(timeoutMs);
      }
      case 'cancel': {
        const runId = cancelParams(params);
        const run = this.#runs.get(runId);
        run?.controller.abort(new Error('cancelled by the client'));
        return { cancelled: run !== undefined };
      }
      case 'release': {
        const owner = releaseParams(params);
        const object = this.#owners.get(owner);
        if (object === undefined) return { released: false };
        this.#owners.delete(owner);
        await this.#runtime!.release(object);
        return { released: true };
      }
      case 'declarations': {
        const { tools, budget } = declarationsParams(params);
        // Read, not created: a declarations call before initialize must not fix the runtime's config.
        const discovery = this.#runtime?.config.discovery ?? this.#baseConfig.discovery ?? false;
        if (budget !== undefined && !discovery) throw new RpcError(ErrorCode.invalidParams, 'declarations: a budget needs discovery: true in the config, since past it programs find tools with search() and describe()');
        try {
          return { declarations: discovery ? toolCatalog(tools).declarations(budget !== undefined ? { budget } : {}) : declarations(tools) };
        } catch (error) {
          throw new RpcError(ErrorCode.invalidParams, `declarations: ${(error as Error).message}`, undefined, { cause: error });
        }
      }
      case 'approve':
      case 'reject':
        return this.#approvals.decide(method, params);
      case 'runs':
      case 'calls':
        return listJournal(this.#live(), method, params);
      case 'resume':
        return this.#run(params, resumeParams(params));
      case 'shutdown':
        noParams('shutdown', params);
        await this.close();
        this.#stop();
        return null;
      default:
        throw new RpcError(ErrorCode.methodNotFound, `unknown method ${JSON.stringify(method)}; this server has ${METHODS.join(', ')}`);
    }
  }

  /** Aborts every run and ends every carrier; idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const run of this.#runs.values()) run.controller.abort(new Error('the server is closing'));
      await this.#runtime?.dispose();
    })();
    return this.#closing;
  }

  /** The runtime, created on first use from the base config and what `initialize` added to it. */
  #live(config: RuntimeConfig = {}): Runtime {
    if (this.#closing !== undefined) throw new RpcError(ErrorCode.shuttingDown, 'the server is shutting down; it starts nothing new');
    return (this.#runtime ??= this.#create({ ...this.#baseConfig, ...config }));
  }

  #create(config: RuntimeConfig): Runtime {
    try {
      // What the host notices outside any run reaches the client as it happens, with the owner's
      // name: a retained environment lost while idle is otherwise heard of only at the next run.
      return createRuntime({
        ...config,
        onDiagnostic: (diagnostic) => this.#connection.notify('diagnostic', { type: diagnostic.type, owner: (diagnostic.owner as { owner?: string }).owner ?? null, message: diagnostic.message }),
      });
    } catch (error) {
      throw new RpcError(ErrorCode.invalidParams, `initialize: ${(error as Error).message}`, undefined, { cause: error });
    }
  }

  async #initialize(params: Record<string, unknown>): Promise<unknown> {
    const { protocolVersion, config } = initializeParams(params);
    if (protocolVersion !== undefined && protocolVersion !== SERVE_PROTOCOL_VERSION) {
      throw new RpcError(ErrorCode.invalidRequest, `the client speaks ptc serve protocol ${protocolVersion}, this server (ptc ${VERSION}) speaks ${SERVE_PROTOCOL_VERSION}`, { protocolVersion: SERVE_PROTOCOL_VERSION });
    }
    if (config !== undefined && this.#runtime !== undefined) throw new RpcError(ErrorCode.invalidRequest, 'initialize: a config is accepted only once, before the first run');
    const runtime = this.#live(config);
    const backends = await availableBackends({ ...(runtime.config.sandbox.bwrapPath !== undefined ? { bwrapPath: runtime.config.sandbox.bwrapPath } : {}) });
    return {
      protocolVersion: SERVE_PROTOCOL_VERSION,
      ptcVersion: VERSION,
      nodeVersion: process.version,
      carrierProtocolRevision: PROTOCOL_REVISION,
      methods: METHODS,
      programFormat: runtime.programFormat,
      retainsState: runtime.retainsState,
      timeout: runtime.timeout,
      executionInstructions: runtime.executionInstructions,
      sandboxBackends: [...(backends.bwrap === undefined ? ['bwrap'] : []), ...(backends.nodePermission === undefined ? ['node-permission'] : []), 'none'],
    };
  }

  /** A new run, or (with `resume`) a journaled one taken up again under its own runId. */
  async #run(params: Record<string, unknown>, resume?: ResumeParams): Promise<unknown> {
    const request: RunParams = resume === undefined ? runParams(params) : { ...resume, program: '' };
    const runtime = this.#live();
    // A generated id skips the ones in flight: a client may have named a run "run-1" itself.
    let runId = request.runId;
    // With a journal, ids outlive this server, so a generated one must be unique beyond it.
    while (runId === undefined || (request.runId === undefined && this.#runs.has(runId))) runId = runtime.config.journal !== undefined ? `run-${randomUUID()}` : `run-${++this.#nextRun}`;
    if (this.#runs.has(runId)) throw new RpcError(ErrorCode.busy, `run: runId ${JSON.stringify(runId)} is already in flight`);
    const { owner } = request;
    if (owner !== undefined && this.#busyOwners.has(owner)) {
      throw new RpcError(ErrorCode.busy, `run: owner ${JSON.stringify(owner)} already has a run in flight; wait for its reply before starting another`);
    }
    const run: ActiveRun = { controller: new AbortController(), invokes: new Set() };
    const toolNames = request.tools.map((tool) => tool.name);
    let spec;
    try {
      const gated = approvalNames(request.approval, toolNames) ?? [];
      const reconciled = approvalNames(request.reconcile, toolNames, 'reconcile') ?? [];
      if (request.approveProgram !== undefined && typeof request.approveProgram !== 'boolean') throw new RpcError(ErrorCode.invalidParams, `run: approveProgram must be a boolean, got ${JSON.stringify(request.approveProgram)}`);
      const optionsOf = (name: string): BindingOptions | undefined => {
        const options: BindingOptions = {
          ...(gated.includes(name) ? { approval: true } : {}),
          ...(reconciled.includes(name) ? { reconcile: (context: ReconcileContext) => this.#reconcile(run, name, context) } : {}),
        };
        return Object.keys(options).length > 0 ? options : undefined;
      };
      const bindings = markTools(toolBindings(request.tools, (name, args) => this.#invoke(run, runId, name, args), runtime.config.discovery), toolNames, optionsOf);
      spec = resume !== undefined ? { bindings } : runtime.resolve({
        program: request.program,
        bindings,
        ...(runtime.config.discovery ? { tools: request.tools } : {}),
        ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
        ...('timeoutMs' in request ? { timeoutMs: request.timeoutMs } : {}),
        ...('cpuTimeMs' in request ? { cpuTimeMs: request.cpuTimeMs } : {}),
        ...(request.policy !== undefined ? { policy: request.policy } : {}),
        ...(request.discardCompletion !== undefined ? { discardCompletion: request.discardCompletion } : {}),
        ...(request.onPolicyChange !== undefined ? { onPolicyChange: request.onPolicyChange } : {}),
        ...(owner !== undefined ? { stateOwner: this.#ownerObject(owner) } : {}),
      });
    } catch (error) {
      if (error instanceof RpcError) throw error;
      throw new RpcError(ErrorCode.invalidParams, `run: ${(error as Error).message}`, undefined, { cause: error });
    }
    this.#runs.set(runId, run);
    if (owner !== undefined) this.#busyOwners.add(owner);
    const ended = (): void => {
      this.#runs.delete(runId);
      if (owner !== undefined) this.#busyOwners.delete(owner);
      const over = Object.assign(new Error(`run ${runId} has ended`), { code: 'PTC_EVALUATION_ENDED' });
      for (const id of run.invokes) this.#connection.forget(id, over);
    };
    let yielded = false;
    try {
      const options = {
        signal: run.controller.signal,
        onOutput: (entry: OutputEntry) => this.#connection.notify('output', { runId, entry }),
        // Every run can be asked: a tool gated by the config's approval predicate needs an answer too.
        onApproval: this.#approvals.handler(runId, pathsToNames(toolNames), (params) => this.#connection.notify('approval', params)),
        ...(request.approveProgram === true ? { onProgramApproval: this.#approvals.programHandler(runId, pathsToNames(toolNames), (params) => this.#connection.notify('approval', params)) } : {}),
      };
      // A resumed run keeps its journal's runId: that is the id its invokes and notifications carry.
      const trace = { ...(request.traceparent !== undefined ? { traceparent: request.traceparent } : {}), ...(request.tracestate !== undefined ? { tracestate: request.tracestate } : {}) };
      if (resume !== undefined) return await runtime.resume(runId, { ...options, bindings: spec.bindings });
      if (request.yieldAfterMs === undefined) return await runtime.run(spec as RunSpec, { ...options, runId, ...trace });
      const look = await runtime.run(spec as RunSpec, { ...options, runId, ...trace, yieldAfterMs: request.yieldAfterMs });
      if (look.status !== 'running') return look;
      // The run goes on: it stays in flight (its invokes, cancel, the owner busy) until it ends.
      yielded = true;
      run.handle = look.handle;
      void look.handle.result.finally(ended).catch(() => {});
      return { status: 'running', runId, output: look.output };
    } catch (error) {
      // The library rejects only caller misuse here, such as a writable root that does not exist or
      // a policy that would change a retained owner's (its message says how to release the owner).
      throw new RpcError(ErrorCode.invalidParams, `run: ${(error as Error).message}`, undefined, { cause: error });
    } finally {
      if (!yielded) ended();
    }
  }

  #ownerObject(owner: string): object {
    let object = this.#owners.get(owner);
    if (object === undefined) this.#owners.set(owner, (object = { owner }));
    return object;
  }

  /** One binding call: an `invoke` request to the client, with the call's context; its error reply becomes the program's BindingError. */
  async #invoke(run: ActiveRun, runId: string, name: string, args: unknown[]): Promise<unknown> {
    const context = callContext();
    const { id, reply } = this.#connection.request('invoke', { runId, name, args, ...(context !== undefined ? { context: { runId: context.runId, sequence: context.sequence, attempt: context.attempt, idempotencyKey: context.idempotencyKey } } : {}) });
    return this.#await(run, id, reply);
  }

  /** A call in doubt after a crash: a `reconcile` request to the client, answered {outcome, value?, reason?}. */
  async #reconcile(run: ActiveRun, name: string, context: ReconcileContext): Promise<ReconcileAnswer> {
    const { runId, sequence, attempt, idempotencyKey, args } = context;
    const { id, reply } = this.#connection.request('reconcile', { runId, name, args, context: { runId, sequence, attempt, idempotencyKey } });
    return (await this.#await(run, id, reply)) as ReconcileAnswer;
  }

  async #await(run: ActiveRun, id: number, reply: Promise<unknown>): Promise<unknown> {
    run.invokes.add(id);
    try {
      return await reply;
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      const code = (error.data as { code?: unknown } | null | undefined)?.code;
      throw Object.assign(new Error(error.message, { cause: error }), typeof code === 'string' ? { code } : {});
    } finally {
      run.invokes.delete(id);
    }
  }
}

/** The dotted identifier path each tool is called by, to the tool's own name. */
function pathsToNames(names: string[]): Map<string, string> {
  const paths = bindingPaths(names);
  return new Map(names.map((name, index) => [paths[index]!.join('.'), name]));
}
