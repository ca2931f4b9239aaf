// Model-facing guidance for each execution mode: what a program is, how to show output, what it
// returns and what is retained between programs.
import type { ProgramFormat } from '../../wire/messages.ts';

export type { ProgramFormat };

const COMMON = [
  'Call the provided tools with await; they take and return JSON values, and a failed call throws a BindingError with message, binding and code.',
  'Use inspect(...values) to display output. Do not use console.',
  'inspect shows strings as they are, other values in full, and Image values (from tools or await Image.fromFile(path)) as images.',
];

const SYNTAX: Record<ProgramFormat, string[]> = {
  'async-function': [
    'Write the program as the body of an async function in TypeScript (types are erased; enums, namespaces and other non-erasable syntax are rejected).',
    'End with return <value> to hand back a JSON value (numbers, bigints, strings, booleans, null, plain objects and arrays).',
    'Without return nothing comes back: a final bare expression such as `total` is discarded (the result then has a hint).',
  ],
  'vm-script': [
    'Write the program as a script in TypeScript (types are erased; enums, namespaces and other non-erasable syntax are rejected). Top-level await works; top-level return and static import/export do not: load modules with await import(...).',
    'The value of the final expression is the result (awaited), as a JSON value.',
  ],
  'scoped-repl': [
    'Write REPL statements in TypeScript (types are erased). Top-level await works; top-level return does not. Load modules with await import(...).',
    'The last expression statement is the result and is not awaited: write `await x` to get a promise\'s value. A leading { ... } is a block; wrap an object literal in parentheses.',
    'You may redeclare any earlier name with any keyword; each program starts from copies of the earlier top-level values.',
  ],
  repl: [
    'Write Node REPL statements in TypeScript (types are erased). Top-level await works; top-level return does not. Load modules with await import(...).',
    'The last expression is the result. Redeclaring an existing let, const or class name is an error: assign to it or choose a new name.',
  ],
};

function retention(format: ProgramFormat, retained: boolean): string {
  if (!retained) return 'Each program runs in a fresh process: nothing is kept between programs.';
  const what = format === 'vm-script' ? 'Top-level declarations' : 'Top-level variables, functions and imported modules';
  return `${what} persist between your programs while the environment lives, but may be lost at any time (timeout, restart): if a name is missing, recreate it and reacquire resources. Await all tool calls and asynchronous work before the program ends.`;
}

const DISCOVERY = 'search("words") finds tools by the words of their names and descriptions, and describe(path) gives the TypeScript declarations of a tool or namespace: use them to find a tool that is not declared here, and read its declaration before calling it.';

/** The guidance a model needs to write programs for this mode (and for the discovery globals, when programs have them). */
export function executionInstructions(format: ProgramFormat, retained: boolean, discovery = false): string {
  return [...SYNTAX[format], ...COMMON, ...(discovery ? [DISCOVERY] : []), retention(format, retained)].join('\n');
}
