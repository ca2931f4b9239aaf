// `_` and `_error` as Node's interactive REPL keeps them, for runs that ask (`display.underscore`,
// which `ptc repl` sets): after each run `_` holds its completion value and `_error` what it threw.
// Both are accessors on the environment's global object, so a program that declares its own `_`
// shadows them, and one that assigns `_` (or `_error`) keeps its value there and turns the
// automatic one off for good, told once in that run's output with Node's words.
import { inspect } from '../globals/output.ts';
import { defineProperty } from '../hardening/intrinsics.ts';

/** Where the carrier records a run's last value and error. */
export interface Underscore {
  completed(value: unknown): void;
  threw(error: unknown): void;
}

/** Defines `_` and `_error` on `global` (the realm's, or Node's REPL context); returns their recorder. */
export function installUnderscore(global: object): Underscore {
  const slots = { _: slot('_'), _error: slot('_error') };
  for (const [name, held] of [['_', slots._], ['_error', slots._error]] as const) {
    defineProperty(global, name, { __proto__: null, get: held.get, set: held.set, enumerable: false, configurable: true } as PropertyDescriptor);
  }
  return {
    completed: (value) => slots._.record(value),
    threw: (error) => slots._error.record(error),
  };
}

function slot(name: string): { get: () => unknown; set: (value: unknown) => void; record: (value: unknown) => void } {
  let value: unknown;
  let assigned = false;
  return {
    get: () => value,
    set: (given: unknown) => {
      if (!assigned) inspect(`Expression assignment to ${name} now disabled.`);
      assigned = true;
      value = given;
    },
    record: (given: unknown) => {
      if (!assigned) value = given;
    },
  };
}
