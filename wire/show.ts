// Quoting values in error messages: one helper for every layer that validates input (host, relay, front ends).
import { inspect } from 'node:util';

/** Quotes a value for an error message. */
export function show(value: unknown): string {
  return inspect(value, { depth: 2, breakLength: Infinity, maxStringLength: 200 });
}
