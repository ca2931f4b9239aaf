// The process entry's head start: the default carrier booting while the CLI's own modules load.
// A public entry of its own beside index.ts, so that the CLI reaches it without loading the
// library; its imports are dynamic so that this module costs nothing before the spawn.
import { bootMark } from '../wire/boot-mark.ts';

/**
 * Boots the carrier that a run with the default configuration and policy in this directory would
 * take from the pool, so that its start-up overlaps the caller's. A run shaped otherwise simply
 * starts its own carrier; a machine that cannot confine one boots nothing here.
 */
export async function prestartDefaultCarrier(): Promise<void> {
  const [{ confine }, { prestart }, { resolveConfig }] = await Promise.all([import('./worker/confinement.ts'), import('./worker/pool.ts'), import('./runtime/config.ts')]);
  const config = resolveConfig({});
  const confinement = await confine(config, config.policy, process.cwd()).catch(() => undefined);
  bootMark('ptc:sandbox');
  if (confinement !== undefined && 'recipe' in confinement) prestart(confinement.recipe);
  bootMark('ptc:spawned');
}

/**
 * Keeps a warm pool for runs of `config` in `cwd` (the resident pool's, one per directory it
 * serves): resolves with the function that lets it go, or undefined when such a run would not
 * take a pooled carrier (its confinement cannot be prepared ahead, or the config asks for none).
 */
export async function holdWarmPool(config: Record<string, unknown>, cwd: string): Promise<(() => Promise<void>) | undefined> {
  const [{ confine }, { holdPool }, { resolveConfig }] = await Promise.all([import('./worker/confinement.ts'), import('./worker/pool.ts'), import('./runtime/config.ts')]);
  const resolved = resolveConfig(config);
  const confinement = await confine(resolved, resolved.policy, cwd).catch(() => undefined);
  if (confinement === undefined || !('recipe' in confinement)) return undefined;
  return holdPool(confinement.recipe, resolved.pool, resolved.graceMs);
}

/** pauseBoots() of the warm pools (host/worker/pool.ts), loaded: the resident pool holds every boot while a run's client waits for its exit code. */
export async function bootPauser(): Promise<() => () => void> {
  return (await import('./worker/pool.ts')).pauseBoots;
}
