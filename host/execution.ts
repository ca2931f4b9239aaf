// Which environment a run uses: a temporary one (per-call, non-persistent Script, or a request
// without an owner) that ends with the run, or the owner's retained one. One run at a time per
// owner: a second run for a busy owner is refused until the first and its cleanup finish;
// distinct owners run concurrently. A retained environment lost while idle is replaced at the
// next run, and the result says so.
import type { ProgramFormat } from '../carrier/protocol/messages.ts';
import type { ResolvedConfig } from './config.ts';
import { abortedBeforeStart, Environment, type Execution, type RunResult } from './environment.ts';
import { launchCommand } from './launch.ts';
import { takeCarrier } from './spare.ts';

export type { Execution, RunResult, SandboxReport, EnvironmentReport } from './environment.ts';

interface Owned {
  environment: Environment | undefined;
  /** The run (and its cleanup) in progress; undefined when idle. */
  busy: Promise<void> | undefined;
  /** Why the last environment was lost, reported by the next run. */
  replaced: string | undefined;
}

export class Executor {
  readonly #config: ResolvedConfig;
  readonly #format: ProgramFormat;
  readonly #retains: boolean;
  readonly #owners = new Map<object, Owned>();
  readonly #temporary = new Set<Environment>();
  #initializer: string | undefined;

  constructor(config: ResolvedConfig, format: ProgramFormat, retains: boolean) {
    this.#config = config;
    this.#format = format;
    this.#retains = retains;
  }

  /** Installs source that runs once in every new retained environment (see the runtime). */
  setInitializer(program: string): void {
    this.#initializer = program;
  }

  /** Runs one execution for `owner` (or a temporary environment without one). */
  async run(execution: Execution, owner: object | undefined): Promise<RunResult> {
    if (execution.signal?.aborted) return abortedBeforeStart(execution.signal.reason);
    if (!this.#retains || owner === undefined) return this.#runTemporary(execution);
    let owned = this.#owners.get(owner);
    if (owned === undefined) {
      owned = { environment: undefined, busy: undefined, replaced: undefined };
      this.#owners.set(owner, owned);
    }
    if (owned.busy !== undefined) {
      throw new Error('ptc run(): this stateOwner already has a run in progress; await it (and its cleanup) before starting another');
    }
    let release!: () => void;
    owned.busy = new Promise((resolve) => {
      release = resolve;
    });
    try {
      return await this.#runRetained(owned, execution);
    } finally {
      owned.busy = undefined;
      release();
    }
  }

  async #runRetained(owned: Owned, execution: Execution): Promise<RunResult> {
    const current = owned.environment;
    if (current !== undefined && current.lost !== undefined) {
      owned.replaced = `the previous environment was lost: ${current.lost}`;
      owned.environment = undefined;
      await current.terminate();
    }
    const fresh = owned.environment === undefined;
    const environment = (owned.environment ??= this.#newEnvironment(execution.cwd, true));
    const initializer = fresh && this.#initializer !== undefined && !environment.initialized ? this.#initializer : undefined;
    const { result, usable } = await environment.run(execution, initializer);
    result.environment = { fresh, ...(owned.replaced !== undefined && fresh ? { replaced: owned.replaced } : {}) };
    if (fresh) owned.replaced = undefined;
    if (!usable) {
      owned.environment = undefined;
      await environment.terminate();
    }
    return result;
  }

  async #runTemporary(execution: Execution): Promise<RunResult> {
    const environment = this.#newEnvironment(execution.cwd, false);
    this.#temporary.add(environment);
    try {
      const initializer = this.#retains ? this.#initializer : undefined;
      return (await environment.run(execution, initializer)).result;
    } finally {
      await environment.terminate();
      this.#temporary.delete(environment);
    }
  }

  #newEnvironment(cwd: string, retained: boolean): Environment {
    const command = launchCommand(this.#config.launch, this.#config.maxOldGenerationSizeMb);
    return new Environment(takeCarrier(command, this.#config.maxMessageBytes, cwd), this.#config, this.#format, retained);
  }

  /** Ends the owner's environment; waits for a run in progress to finish first. */
  async release(owner: object): Promise<void> {
    const owned = this.#owners.get(owner);
    if (owned === undefined) return;
    while (owned.busy !== undefined) await owned.busy;
    this.#owners.delete(owner);
    await owned.environment?.terminate();
  }

  /** Terminates every environment, retained or temporary, without waiting for runs to finish. */
  async dispose(): Promise<void> {
    const all = [...this.#temporary, ...[...this.#owners.values()].flatMap((owned) => (owned.environment ? [owned.environment] : []))];
    this.#owners.clear();
    await Promise.all(all.map((environment) => environment.terminate()));
  }
}
