// Stands in for `node:assert` in the bundled CLI, which only yargs imports, for the two checks of
// its own invariants it makes (strictEqual, notStrictEqual). Loading Node's assert costs ~3 ms of
// every `ptc` start, and more: its error colours look up whether stderr is a terminal, which makes
// Node create the stderr stream even for `ptc --version`. A failed check throws as Node's would:
// an AssertionError (code ERR_ASSERTION) with the message given, or one naming both values.
import { inspect } from 'node:util';

class AssertionError extends Error {
  readonly code = 'ERR_ASSERTION';
  readonly actual: unknown;
  readonly expected: unknown;
  readonly operator: string;

  constructor(message: string, actual: unknown, expected: unknown, operator: string) {
    super(message);
    this.name = 'AssertionError';
    this.actual = actual;
    this.expected = expected;
    this.operator = operator;
  }
}

function fail(message: string | Error | undefined, fallback: string, actual: unknown, expected: unknown, operator: string): never {
  if (message instanceof Error) throw message;
  throw new AssertionError(message ?? fallback, actual, expected, operator);
}

export function strictEqual(actual: unknown, expected: unknown, message?: string | Error): void {
  if (!Object.is(actual, expected)) fail(message, `Expected values to be strictly equal: ${inspect(actual)} !== ${inspect(expected)}`, actual, expected, 'strictEqual');
}

export function notStrictEqual(actual: unknown, expected: unknown, message?: string | Error): void {
  if (Object.is(actual, expected)) fail(message, `Expected "actual" to be strictly unequal to: ${inspect(expected)}`, actual, expected, 'notStrictEqual');
}

export default { strictEqual, notStrictEqual, AssertionError };
