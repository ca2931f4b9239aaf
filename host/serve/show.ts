// Quoting values in error messages (the library's own helper is below the front ends' layer).
import { inspect } from 'node:util';

/** Quotes a value for an error message. */
export function show(value: unknown): string {
  return inspect(value, { depth: 2, breakLength: Infinity, maxStringLength: 200 });
}
