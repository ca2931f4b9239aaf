// Which environment a run uses: a temporary one (per-call, non-persistent Script, or a request
// without an owner) that ends with the run, or the owner's retained one. One run at a time per
// owner: a second run for a busy owner is refused until the first and its cleanup finish;
// distinct owners run concurrently. A retained environment lost while idle is replaced at the
// next run, and the result says so.
import type { ProgramFormat } from '../../carrier/protocol/messages.ts';
import type { ResolvedConfig } from './settings.ts';
import { confine, type CarrierRecipe } from '../worker/confinement.ts';
import { abortedBeforeStart, Environment, sandboxUnavailable, type Execution, type RunResult } from './environment.ts';
import type { SandboxPolicy } from '../sandbox/index.ts';
import { takeCarrier } from '../worker/spare.ts';

export type { Execution, RunResult, SandboxReport, EnvironmentReport } from './environment.ts';

interface Owned {
  environment: Environment | undefined;
  /** The recipe (launch shape and sandbox policy) the environment was started with. */
  recipeKey: string | undefined;
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

  /**
   * Runs one execution for `owner` under `policy`. Without an owner, or with `oneTime`, it runs in a
   * temporary environment that sees none of the owner's variables. A policy that is not valid
   * rejects (caller misuse); confinement that cannot be had is a sandbox-unavailable result.
   */
  async run(execution: Execution, owner: object | undefined, policy: SandboxPolicy, oneTime: boolean): Promise<RunResult> {
    if (execution.signal?.aborted) return abortedBeforeStart(execution.signal.reason);
    const confinement = await confine(this.#config, policy, execution.cwd);
    if ('unavailable' in confinement) return sandboxUnavailable(confinement.unavailable, confinement.report);
    const { recipe } = confinement;
    if (!this.#retains || owner === undefined || oneTime) return this.#runTemporary(execution, recipe);
    let owned = this.#owners.get(owner);
    if (owned === undefined) {
      owned = { environment: undefined, recipeKey: undefined, busy: undefined, replaced: undefined };
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
      return await this.#runRetained(owned, execution, recipe);
    } finally {
      owned.busy = undefined;
      release();
    }
  }

  async #runRetained(owned: Owned, execution: Execution, recipe: CarrierRecipe): Promise<RunResult> {
    const current = owned.environment;
    // An owner's policy, workspace and writable roots are fixed while its environment lives.
    const reason = current?.lost !== undefined
      ? `the previous environment was lost: ${current.lost}`
      : current !== undefined && owned.recipeKey !== recipe.key
        ? 'the sandbox policy changed, so the previous environment was ended'
        : undefined;
    if (current !== undefined && reason !== undefined) {
      owned.replaced = reason;
      owned.environment = undefined;
      await current.terminate();
    }
    const fresh = owned.environment === undefined;
    if (fresh) owned.recipeKey = recipe.key;
    const environment = (owned.environment ??= this.#newEnvironment(recipe, true));
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

  async #runTemporary(execution: Execution, recipe: CarrierRecipe): Promise<RunResult> {
    const environment = this.#newEnvironment(recipe, false);
    this.#temporary.add(environment);
    try {
      const initializer = this.#retains ? this.#initializer : undefined;
      return (await environment.run(execution, initializer)).result;
    } finally {
      // The kill has gone out; dispose() waits for what is still ending.
      void environment.terminate().then(() => this.#temporary.delete(environment));
    }
  }

  #newEnvironment(recipe: CarrierRecipe, retained: boolean): Environment {
    return new Environment(takeCarrier(recipe), this.#config, this.#format, retained, recipe.report);
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
