// Quoting values in error messages, shared by config validation and binding checks.
import { inspect } from 'node:util';

/** Quotes a value for an error message. */
export function show(value: unknown): string {
  return inspect(value, { depth: 2, breakLength: Infinity, maxStringLength: 200 });
}
