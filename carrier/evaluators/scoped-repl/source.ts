// Source generation for one scoped REPL call. The program becomes the body of an async arrow
// function, returned by an outer arrow that receives the evaluator's two hooks:
//
//   "use strict";(__$binding_get, __$binding_keep) => async () => {let __$binding_last; var a = __$binding_get("a"), ...; __$binding_keep(() => __$binding_last, () => a, ...);
//   <program, line for line, with `__$binding_last=(` ... `)` around the final expression>
//   }
//
// Everything generated sits on one line before the program, which a lineOffset of -1 cancels, so
// program lines keep their numbers and only the final expression's line has shifted columns. Arrows
// keep the global `this` and leave `arguments` undefined, as at a REPL's top level. Earlier names
// arrive as `var` copies, so assigning to one changes this call's copy, and `var x = x + 1`
// starts from the earlier value; names the program declares with let, const, class or function
// get no copy and start as JavaScript starts them. `__$binding_keep` receives one reader per
// top-level name; the next call copies through them, so a call sees what the names held when it
// starts.
import { RESERVED_PREFIX } from './declarations.ts';

const stringLiteral = JSON.stringify as (value: string) => string;

export const COMPLETION = `${RESERVED_PREFIX}last`;
const GET = `${RESERVED_PREFIX}get`;
const KEEP = `${RESERVED_PREFIX}keep`;
/** Inserted before the final expression; columns after it on that line move right by its length. */
const COMPLETION_OPEN = `${COMPLETION}=(`;

export interface CallSource {
  readonly program: string;
  readonly strict: boolean;
  /** Names given `var` copies of their earlier values. */
  readonly copies: readonly string[];
  /** Every top-level name of the call, in the order of the readers after the completion reader. */
  readonly kept: readonly string[];
  /** The final expression statement's expression, made the completion; absent for none. */
  readonly completion?: { readonly start: number; readonly end: number } | undefined;
}

/** The script text for one call; it evaluates to `(get, keep) => async () => {...}`. */
export function generateCallSource(call: CallSource): string {
  let header = `${call.strict ? '"use strict";' : ''}(${GET}, ${KEEP}) => async () => {let ${COMPLETION};`;
  if (call.copies.length > 0) {
    header += `var ${call.copies.map((name) => `${name} = ${GET}(${stringLiteral(name)})`).join(', ')};`;
  }
  header += `${KEEP}(() => ${COMPLETION}${call.kept.map((name) => `, () => ${name}`).join('')});`;
  const { program, completion } = call;
  const body = completion === undefined
    ? program
    : `${program.slice(0, completion.start)}${COMPLETION_OPEN}${program.slice(completion.start, completion.end)})${program.slice(completion.end)}`;
  return `${header}\n${body}\n}`;
}
