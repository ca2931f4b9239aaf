// The scoped REPL's retained names. Each name maps to a reader of the binding that the latest call
// declaring or copying it owns, so the next call copies what that binding holds when the call
// starts, including assignments made by callbacks in between. A let, const or class binding that
// never initialized (its call threw first) cannot be read; its entry falls back to the binding it
// replaced, so a failed redeclaration keeps the earlier value.
//
// plan() runs with the built-ins restored (scoped-repl.ts compiles inside withPristineBuiltins);
// keep() and the copied values' lookups run from the program's prologue, after the program may have
// replaced Map and Set methods, so the collections they touch are the captured Safe ones.
import { append, SafeMap, SafeSet } from '../../hardening/intrinsics.ts';
import type { Declarations } from './declarations.ts';

interface Entry {
  readonly read: () => unknown;
  /** The entry this one replaced, while this one may still be uninitialized. */
  previous: Entry | undefined;
}

/** One call's view of the retained names, fixed before its program runs. */
export interface CallPlan {
  /** Earlier names this call does not redeclare lexically: they get `var` copies. */
  readonly copies: readonly string[];
  /** All top-level names of the call, in the order its readers are kept. */
  readonly kept: readonly string[];
  /** The copied values, by name. */
  readonly values: ReadonlyMap<string, unknown>;
  /** Names that start uninitialized in this call. */
  readonly lexical: ReadonlySet<string>;
}

const UNREADABLE: unique symbol = Symbol('unreadable');

export class ScopeChain {
  private readonly entries = new SafeMap<string, Entry>();

  /** Reads every earlier name this call will copy, now, as the call starts. */
  plan(declarations: Declarations): CallPlan {
    const lexical = new SafeSet(declarations.lexical);
    const functions = new Set(declarations.functions);
    const copies: string[] = [];
    const values = new SafeMap<string, unknown>();
    for (const [name, entry] of this.entries) {
      if (lexical.has(name) || functions.has(name)) continue;
      const value = readEntry(entry);
      if (value === UNREADABLE) continue;
      copies.push(name);
      values.set(name, value);
    }
    const kept = new Set<string>(copies);
    for (const names of [declarations.vars, declarations.functions, declarations.lexical]) for (const name of names) kept.add(name);
    return { copies, kept: [...kept], values, lexical };
  }

  /** Makes the readers of a started call the source of its names (readers follow `plan.kept`). */
  keep(plan: CallPlan, readers: readonly (() => unknown)[]): void {
    for (let index = 0; index < plan.kept.length; index++) {
      const name = plan.kept[index]!;
      const previous = plan.lexical.has(name) ? this.entries.get(name) : undefined;
      this.entries.set(name, { read: readers[index]!, previous });
    }
  }

  clear(): void {
    this.entries.clear();
  }

  /** The retained names (for completion). */
  names(): string[] {
    const names: string[] = [];
    this.entries.forEach((_entry, name) => append(names, name));
    return names;
  }

  /** The value the next call would copy for `name`, when there is one. */
  lookup(name: string): { value: unknown } | undefined {
    const entry = this.entries.get(name);
    const value = entry === undefined ? UNREADABLE : readEntry(entry);
    return value === UNREADABLE ? undefined : { value };
  }
}

/** The value of the newest initialized binding in an entry's chain. */
function readEntry(entry: Entry): unknown {
  for (let current: Entry | undefined = entry; current !== undefined; current = current.previous) {
    try {
      const value = current.read();
      // An initialized binding never returns to its TDZ: the bindings it replaced are not needed.
      current.previous = undefined;
      return value;
    } catch {
      // Still in its TDZ: the program that declares it threw (or has not reached it yet).
    }
  }
  return UNREADABLE;
}
