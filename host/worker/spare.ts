// Spare carriers: a fresh, never-used carrier started ahead of the next run, so a run does not
// wait for a Node process to boot. Every run still gets a process that has run no other code.
// Spares are keyed by their recipe (launch, limits, sandbox backend and policy), so a spare only
// serves a run that would have started the same carrier. An idle spare is unref'd so it never
// keeps the host alive, and it exits by itself when the host does, as its control channel closes.
import type { CarrierRecipe } from './confinement.ts';
import type { Carrier } from './carrier.ts';

const spares = new Map<string, Carrier>();
const holders = new Map<string, number>();

/** Starts a spare for this recipe unless one is already waiting. */
export function startSpare(recipe: CarrierRecipe): void {
  const existing = spares.get(recipe.key);
  if (existing !== undefined && !existing.exited) return;
  const carrier = recipe.create();
  carrier.unref();
  spares.set(recipe.key, carrier);
}

/** A carrier for one run: the waiting spare when it is alive, otherwise a new one. Its
 * replacement is not started here: see replenishSpare. */
export function takeCarrier(recipe: CarrierRecipe): Carrier {
  const spare = spares.get(recipe.key);
  spares.delete(recipe.key);
  let carrier: Carrier;
  if (spare !== undefined && !spare.exited) {
    spare.ref();
    carrier = spare;
  } else {
    if (spare !== undefined) void spare.terminate(0);
    carrier = recipe.create();
  }
  return carrier;
}

/**
 * Starts booting the replacement for a carrier taken for this recipe, while any runtime holds
 * spares for it. Called once the run that took the carrier has its result: spawning a carrier
 * blocks the host's event loop for 3 to 10 ms, which a run's own reply would otherwise wait
 * behind (half of a trivial per-call run with a spare). The immediate lets the result reach its
 * caller first; a next run that comes sooner boots its own carrier, as without spares.
 */
export function replenishSpare(recipe: CarrierRecipe): void {
  setImmediate(() => {
    if ((holders.get(recipe.key) ?? 0) > 0) startSpare(recipe);
  });
}

/** Declares interest in spares for a recipe; the returned function withdraws it and stops the spare when no one else wants it. */
export function holdSpares(recipe: CarrierRecipe, graceMs: number): () => Promise<void> {
  const { key } = recipe;
  holders.set(key, (holders.get(key) ?? 0) + 1);
  startSpare(recipe);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    const remaining = (holders.get(key) ?? 1) - 1;
    if (remaining > 0) {
      holders.set(key, remaining);
      return;
    }
    holders.delete(key);
    const spare = spares.get(key);
    spares.delete(key);
    await spare?.terminate(graceMs);
  };
}

// A host that exits normally takes its spares (and their private temp directories) with it at
// once rather than leaving them to notice the closed channel.
process.once('exit', () => {
  for (const spare of spares.values()) spare.killNow();
});
