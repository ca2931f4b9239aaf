// Model-facing guidance for the per-call mode: what a program is, how to show output, what it returns.

export type ProgramFormat = 'async-function';

export const PROGRAM_FORMAT: ProgramFormat = 'async-function';

export const executionInstructions = [
  'Write the program as the body of an async function in TypeScript (types are erased; enums, namespaces and other non-erasable syntax are rejected).',
  'Call the provided tools with await; they take and return JSON values, and a failed call throws a BindingError with message, binding and code.',
  'Use inspect(...values) to display output. Do not use console.',
  'inspect shows strings as they are, other values in full, and Image values (from tools or await Image.fromFile(path)) as images.',
  'End with return <value> to hand back a JSON value (numbers, bigints, strings, booleans, null, plain objects and arrays).',
  'Each program runs in a fresh process: nothing is kept between programs.',
].join('\n');
