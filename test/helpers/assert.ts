// Small assertions shared by the suites.

/** The error `promise` rejects with; throws when it resolves instead. */
// Typed any: tests read arbitrary fields (code, stack, cause) off whatever was thrown.
export async function rejection(promise: Promise<unknown>): Promise<any> {
  let value: unknown;
  try {
    value = await promise;
  } catch (error) {
    return error;
  }
  throw new Error(`expected a rejection, got ${String(value)}`);
}

/** The error `fn` throws; throws when it returns instead. */
export function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}
