// Which environment a run uses: a temporary one (per-call, non-persistent Script, or a request
// without an owner) that ends with the run, or the owner's retained one. One run at a time per
// owner: a second run for a busy owner is refused until the first and its cleanup finish;
// distinct owners run concurrently. A retained environment lost while idle is replaced at the
// next run, and the result says so. Retained environments do not pile up: one idle for
// idleTimeoutMs is released, and past maxRetainedEnvironments the least recently used idle one
// is; a busy one never is. When every one is busy, a new owner's environment starts anyway and
// the excess is released as runs end (the least recently used idle one each time). An owner's
// sandbox policy is fixed while its environment lives (owner-policy.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProgramFormat } from '../../wire/messages.ts';
import type { ResolvedConfig, RuntimeDiagnostic } from './settings.ts';
import { confine, type CarrierRecipe } from '../worker/confinement.ts';
import { isRemoteLaunch } from '../worker/launch.ts';
import { ownerPolicy, policyChangeRefused, policyChangeReplaced, policyDifferences, type PolicyChange } from './owner-policy.ts';
import { Environment } from './environment.ts';
import type { Execution } from './run/execution.ts';
import { abortedBeforeStart, sandboxUnavailable, type RunResult } from './run/outcome.ts';
import type { SandboxPolicy } from '../sandbox/index.ts';
import { replenish, runBegins, takeCarrier } from '../worker/pool.ts';

/** How long a run waits for an exited transport's last bytes (its exit frame) before going on. */
const TRANSPORT_END_WAIT_MS = 2_000;

export type { Execution } from './run/execution.ts';
export type { RunResult, SandboxReport, EnvironmentReport } from './run/outcome.ts';

/** Where a run goes: its owner's retained environment or a temporary one, under which policy. */
export interface Placement {
  readonly stateOwner: object | undefined;
  readonly policy: SandboxPolicy;
  /** Run in a temporary environment even with a stateOwner. */
  readonly oneTime: boolean;
  readonly onPolicyChange: PolicyChange;
}

interface Owned {
  /** The state owner this is the record of (what the runtime's onDiagnostic names). */
  readonly owner: object;
  environment: Environment | undefined;
  /** The recipe (launch shape and sandbox policy) the environment was started with. */
  recipe: CarrierRecipe | undefined;
  /** The run (and its cleanup) in progress; undefined when idle. */
  busy: Promise<void> | undefined;
  /** Why the last environment was lost, reported by the next run. */
  replaced: string | undefined;
  /** When the owner's last run began or ended, on the executor's use clock (least recently used first). */
  used: number;
  /** Releases the environment once it has been idle for idleTimeoutMs. */
  idleTimer: ReturnType<typeof setTimeout> | undefined;
}

interface Initializer {
  code: string;
  /** Runs under way that started an environment with it. */
  runs: Set<Promise<unknown>>;
}

export class Executor {
  readonly #config: ResolvedConfig;
  readonly #format: ProgramFormat;
  readonly #retains: boolean;
  readonly #owners = new Map<object, Owned>();
  readonly #temporary = new Set<Environment>();
  #initializer: Initializer | undefined;
  #clock = 0;
  /** Releases under way (idle or evicted), which dispose() waits for. */
  readonly #releasing = new Set<Promise<void>>();

  constructor(config: ResolvedConfig, format: ProgramFormat, retains: boolean) {
    this.#config = config;
    this.#format = format;
    this.#retains = retains;
  }

  /**
   * Installs source that runs once in every new environment (see the runtime). The function it
   * returns unregisters it: environments started afterwards run no initializer, and its promise
   * resolves once the runs that were already initializing with it have ended.
   */
  setInitializer(program: string): () => Promise<void> {
    const initializer: Initializer = { code: program, runs: new Set() };
    this.#initializer = initializer;
    return async () => {
      if (this.#initializer === initializer) this.#initializer = undefined;
      await Promise.allSettled([...initializer.runs]);
    };
  }

  /** Runs `run` with the initializer, when there is one, counted among the initializer's runs. */
  async #initializing<T>(run: (code: string | undefined) => Promise<T>): Promise<T> {
    const initializer = this.#initializer;
    if (initializer === undefined) return run(undefined);
    const running = run(initializer.code);
    initializer.runs.add(running);
    try {
      return await running;
    } finally {
      initializer.runs.delete(running);
    }
  }

  /**
   * Runs one execution for its `stateOwner` under its `policy`. Without an owner, or with `oneTime`, it runs in a
   * temporary environment that sees none of the owner's variables. A policy that is not valid
   * rejects (caller misuse), and so does one that differs from the owner's live environment's
   * unless `onPolicyChange` is 'replace'; confinement that cannot be had is a sandbox-unavailable result.
   */
  async run(execution: Execution, placement: Placement): Promise<RunResult> {
    // While it waits for its result, the warm pool does not spawn (see pool.ts).
    const ended = runBegins();
    try {
      return await this.#run(execution, placement);
    } finally {
      ended();
    }
  }

  async #run(execution: Execution, { stateOwner: owner, policy, oneTime, onPolicyChange }: Placement): Promise<RunResult> {
    if (execution.signal?.aborted) return abortedBeforeStart(execution.signal.reason);
    if (!this.#retains || owner === undefined || oneTime) {
      const confinement = await confine(this.#config, policy, execution.cwd);
      if ('unavailable' in confinement) return sandboxUnavailable(confinement.unavailable, confinement.report);
      return this.#runTemporary(execution, confinement.recipe);
    }
    // The owner is busy from the call on, before the confinement is awaited: a release() or a
    // second run called after this one must see the run in progress, not an idle environment.
    let owned = this.#owners.get(owner);
    if (owned === undefined) {
      owned = { owner, environment: undefined, recipe: undefined, busy: undefined, replaced: undefined, used: 0, idleTimer: undefined };
      this.#owners.set(owner, owned);
    }
    if (owned.busy !== undefined) {
      throw new Error('ptc run(): this stateOwner already has a run in progress; await it (and its cleanup) before starting another');
    }
    let release!: () => void;
    owned.busy = new Promise((resolve) => {
      release = resolve;
    });
    clearTimeout(owned.idleTimer);
    owned.idleTimer = undefined;
    owned.used = ++this.#clock;
    try {
      // A transport whose process has exited (an SSH connection that dropped while idle) is read
      // to its end first, so this run finds the environment lost, and why, instead of sending into it.
      const connection = owned.environment?.carrier.connection;
      if (connection?.ending === true) await Promise.race([connection.settled, sleep(TRANSPORT_END_WAIT_MS, undefined, { ref: false })]);
      // A live environment keeps its policy; a lost one is replaced anyway, under the run's own.
      const live = owned.environment !== undefined && owned.environment.lost === undefined ? owned.recipe : undefined;
      const elsewhere = isRemoteLaunch(this.#config.launch);
      const asked = live === undefined ? policy : ownerPolicy(policy, execution.cwd, live.policy.workspaceRoot, onPolicyChange, { elsewhere });
      const confinement = await confine(this.#config, asked, execution.cwd);
      if ('unavailable' in confinement) return sandboxUnavailable(confinement.unavailable, confinement.report);
      const changes = live === undefined ? [] : policyDifferences(live.policy, confinement.recipe.policy);
      if (changes.length > 0 && onPolicyChange === 'refuse') throw policyChangeRefused(changes);
      return await this.#runRetained(owned, execution, confinement.recipe, changes);
    } finally {
      owned.busy = undefined;
      owned.used = ++this.#clock;
      release();
      if (owned.environment !== undefined && this.#owners.get(owner) === owned) this.#armIdle(owned);
      // An owner left with no environment and nothing to tell its next run (its confinement
      // threw or was unavailable, or its environment ended) needs no entry: the next run is fresh.
      else if (owned.environment === undefined && owned.replaced === undefined && this.#owners.get(owner) === owned) this.#owners.delete(owner);
      // The finished run does not wait for an excess environment to end.
      void this.#evictOverLimit(undefined);
    }
  }

  /** Starts the owner's idle clock: after idleTimeoutMs without a run, its environment is released. */
  #armIdle(owned: Owned): void {
    const idleMs = this.#config.idleTimeoutMs;
    if (idleMs === undefined) return;
    owned.idleTimer = setTimeout(() => {
      owned.idleTimer = undefined;
      if (owned.busy === undefined) void this.#releaseIdle(owned, `the previous environment was idle for ${idleMs} ms (idleTimeoutMs), so it was released`);
    }, idleMs);
    // An idle host still exits; a pending release is nothing to wait for.
    owned.idleTimer.unref();
  }

  /** Ends an idle owner's environment; its next run starts fresh and reports `reason`. */
  async #releaseIdle(owned: Owned, reason: string): Promise<void> {
    const environment = owned.environment;
    if (environment === undefined || owned.busy !== undefined) return;
    clearTimeout(owned.idleTimer);
    owned.idleTimer = undefined;
    owned.environment = undefined;
    // A process that died while idle is the better reason: it was gone before the limit applied.
    owned.replaced = environment.lost !== undefined ? `the previous environment was lost: ${environment.lost}` : reason;
    const ending = environment.terminate();
    this.#releasing.add(ending);
    try {
      await ending;
    } finally {
      this.#releasing.delete(ending);
    }
  }

  /**
   * While more than maxRetainedEnvironments exist (counting one about to start for `incoming`),
   * releases the least recently used idle one. A busy environment is never released.
   */
  async #evictOverLimit(incoming: Owned | undefined): Promise<void> {
    const most = this.#config.maxRetainedEnvironments;
    if (most === undefined) return;
    const released: Promise<void>[] = [];
    for (;;) {
      let count = incoming === undefined ? 0 : 1;
      let oldest: Owned | undefined;
      for (const owned of this.#owners.values()) {
        if (owned === incoming || owned.environment === undefined) continue;
        count++;
        if (owned.busy === undefined && (oldest === undefined || owned.used < oldest.used)) oldest = owned;
      }
      if (count <= most || oldest === undefined) break;
      released.push(this.#releaseIdle(oldest, `the previous environment was the least recently used one past maxRetainedEnvironments (${most}), so it was released`));
    }
    await Promise.all(released);
  }

  /** `changes`: how the run's policy differs from the live environment's, which it then replaces (onPolicyChange: 'replace'). */
  async #runRetained(owned: Owned, execution: Execution, recipe: CarrierRecipe, changes: string[]): Promise<RunResult> {
    const current = owned.environment;
    const reason = current?.lost !== undefined
      ? `the previous environment was lost: ${current.lost}`
      : current !== undefined && changes.length > 0
        ? policyChangeReplaced(changes)
        // The same policy in a carrier shaped otherwise: only a remote launch whose connection failed.
        : current !== undefined && owned.recipe?.key !== recipe.key
          ? 'the carrier\'s launch changed, so the previous environment was ended'
          : undefined;
    if (current !== undefined && reason !== undefined) {
      owned.replaced = reason;
      owned.environment = undefined;
      await current.terminate();
    }
    const fresh = owned.environment === undefined;
    if (fresh) {
      owned.recipe = recipe;
      await this.#evictOverLimit(owned);
    }
    const environment = (owned.environment ??= this.#newEnvironment(recipe, true, owned.owner));
    const { result, usable, unreached } = fresh && !environment.initialized
      ? await this.#initializing((initializer) => environment.run(execution, initializer))
      : await environment.run(execution);
    if (unreached && !fresh) {
      // Lost while idle before the run reached it (a remote relay's memory watchdog): as if the
      // loss had been seen before the run, it runs in a fresh environment that says why.
      owned.environment = undefined;
      owned.replaced = `the previous environment was lost: ${environment.lost}`;
      await environment.terminate();
      return this.#runRetained(owned, execution, recipe, []);
    }
    if (fresh) replenish(recipe);
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
      if (!this.#retains) return (await environment.run(execution)).result;
      return (await this.#initializing((initializer) => environment.run(execution, initializer))).result;
    } finally {
      // The kill has gone out; dispose() waits for what is still ending.
      void environment.terminate().then(() => this.#temporary.delete(environment));
      replenish(recipe);
    }
  }

  #newEnvironment(recipe: CarrierRecipe, retained: boolean, owner?: object): Environment {
    const { carrier, warm } = takeCarrier(recipe);
    const onIdleLoss = owner === undefined ? undefined : (message: string) => this.#diagnose({ type: 'environment-lost', owner, message });
    return new Environment(carrier, this.#config, this.#format, retained, recipe.report, warm, onIdleLoss);
  }

  /** Hands a diagnostic to the runtime's logger; a logger that throws must not take the host down. */
  #diagnose(diagnostic: RuntimeDiagnostic): void {
    try {
      this.#config.onDiagnostic?.(diagnostic);
    } catch {
      // The logger's own failure is its caller's to see; the environment's loss is still reported by the next run.
    }
  }

  /** The names that can follow `path` in the owner's idle, live environment (none otherwise). */
  async complete(owner: object, path: string[]): Promise<string[]> {
    const owned = this.#owners.get(owner);
    const environment = owned?.environment;
    if (owned === undefined || environment === undefined || owned.busy !== undefined || environment.lost !== undefined) return [];
    return environment.carrier.complete(path);
  }

  /** Ends the owner's environment; waits for a run in progress to finish first. */
  async release(owner: object): Promise<void> {
    const owned = this.#owners.get(owner);
    if (owned === undefined) return;
    while (owned.busy !== undefined) await owned.busy;
    this.#owners.delete(owner);
    clearTimeout(owned.idleTimer);
    await owned.environment?.terminate();
  }

  /** Terminates every environment, retained or temporary, without waiting for runs to finish. */
  async dispose(): Promise<void> {
    for (const owned of this.#owners.values()) clearTimeout(owned.idleTimer);
    const all = [...this.#temporary, ...[...this.#owners.values()].flatMap((owned) => (owned.environment ? [owned.environment] : []))];
    this.#owners.clear();
    for (const environment of all) environment.hurry();
    await Promise.all([...all.map((environment) => environment.terminate()), ...this.#releasing]);
  }
}
