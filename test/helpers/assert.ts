// Small assertions shared by the suites.
import * as assert from 'uvu/assert';
import type { Failure, RunResult } from '../../host/index.ts';

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

/** A value as JSON for an assertion's message, bigints written as `12n` (JSON.stringify throws on them). */
export function show(value: unknown): string {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
}

// A failed assertion's message shows the result, cut so a result that carries megabytes of output
// (the limits suites make those) stays readable.
const SHOWN_CHARS = 2000;

/** The value of a result that must have succeeded; `label` names the case in the message. */
// Typed any: tests read arbitrary fields off the program's value.
export function valueOf(result: RunResult, label?: string): any {
  assert.is(result.status, 'ok', `${label === undefined ? '' : `${label}: `}expected ok, got ${show(result).slice(0, SHOWN_CHARS)}`);
  return (result as Extract<RunResult, { status: 'ok' }>).value;
}

/** The failure of a result that must have failed. */
export function failureOf(result: RunResult): Failure {
  assert.is(result.status, 'failed', `expected a failure, got ${show(result).slice(0, SHOWN_CHARS)}`);
  return (result as Extract<RunResult, { status: 'failed' }>).failure;
}
