// The pool decision: a runtime with prestartCarrier keeps a warm pool for the default policy in
// the default cwd (see resolveRequest), the shape most runs have. Resolving the policy and
// probing the sandbox are asynchronous, so the pool is held once they are known.
import { resolve as resolvePath } from 'node:path';
import type { ResolvedConfig } from './config.ts';
import { confine, type CarrierRecipe } from '../worker/confinement.ts';
import { holdPool, warmPool } from '../worker/pool.ts';

export interface DefaultPool {
  /** Resolves once the pool holds its target of booted carriers (at once without a pool); never rejects. */
  warmUp(): Promise<void>;
  /** Lets the pool go: its idle carriers end. */
  release(): Promise<void>;
}

/** Holds the warm pool of a runtime's default runs, when its configuration asks for one. */
export function holdDefaultPool(config: ResolvedConfig): DefaultPool {
  const defaultCwd = resolvePath(config.policy.workspaceRoot ?? process.cwd());
  const defaultPolicy = config.policy.workspaceRoot === undefined ? config.policy : { ...config.policy, workspaceRoot: defaultCwd };
  const pooled: Promise<{ recipe: CarrierRecipe; release(): Promise<void> | void } | undefined> = !config.prestartCarrier
    ? Promise.resolve(undefined)
    : confine(config, defaultPolicy, defaultCwd).then(
        (confinement) => ('recipe' in confinement ? { recipe: confinement.recipe, release: holdPool(confinement.recipe, config.pool, config.graceMs) } : undefined),
        () => undefined,
      );
  let released = false;
  return {
    async warmUp() {
      const pool = await pooled;
      if (pool !== undefined && !released) await warmPool(pool.recipe);
    },
    async release() {
      released = true;
      await pooled.then((pool) => pool?.release());
    },
  };
}
