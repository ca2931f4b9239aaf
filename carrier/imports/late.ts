// Imports that outlive their evaluation (the reference's rule): one started or resolved after a
// retained evaluation ended rejects; in a temporary environment it stays pending until the process
// exits. The evaluation an import belongs to is the one its calling code runs in (the carrier's
// AsyncLocalStorage scope), so a saved function that a later active evaluation calls imports normally.
import { NativePromise, rejected, SafeWeakSet, then } from '../hardening/intrinsics.ts';
import type { ImportSetup } from './setup.ts';

const ended = new SafeWeakSet<object>();

/** Never settles: a temporary evaluation's late import waits for the process to end. */
export const NEVER: Promise<never> = new NativePromise<never>(() => {});

/** The rejection of an import that started or finished after its evaluation ended. */
export function importAfterEnd(specifier: string): Error {
  const error = new Error(`import of ${JSON.stringify(specifier)} after the evaluation that started it ended`);
  Object.defineProperty(error, 'code', { value: 'PTC_EVALUATION_ENDED', enumerable: true, configurable: true, writable: true });
  ended.add(error);
  return error;
}

/** Whether a module or graph failed because an evaluation ended (a later evaluation loads it again). */
export function failedByEnd(error: unknown): boolean {
  return typeof error === 'object' && error !== null && ended.has(error);
}

/** What a late import becomes: a rejection in a retained environment, a wait without end in a temporary one. */
export function lateImport<T>(setup: ImportSetup, specifier: string): Promise<T> {
  return setup.retained ? rejected(importAfterEnd(specifier)) : NEVER;
}

/**
 * Runs one import for the evaluation the calling code belongs to: late when that evaluation has
 * already ended, and late again when it ends before the import settles.
 */
export function guardImport<T>(setup: ImportSetup, specifier: string, start: () => Promise<T>): Promise<T> {
  const evaluation = setup.evaluation();
  if (evaluation === undefined) return lateImport(setup, specifier);
  let importing: Promise<T>;
  try {
    importing = start();
  } catch (error) {
    importing = rejected(error);
  }
  // The reactions run in the import's own scope, so setup.evaluation() is its evaluation while active.
  return then(
    importing,
    (value: T) => (setup.evaluation() === evaluation ? value : lateImport<T>(setup, specifier)),
    (error: unknown) => (setup.evaluation() === evaluation ? rejected<T>(error) : lateImport<T>(setup, specifier)),
  ) as Promise<T>;
}
