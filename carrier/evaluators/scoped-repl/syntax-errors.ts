// SyntaxErrors that point at the program as written. The engine's own message is preferred: the
// program is compiled alone, as the async function body it runs as, so V8 decorates the error with
// the program's line, source text and caret. Rules of the scoped REPL itself (no top-level
// `return`, no `#!`, no reserved prefix) get the same decorated shape, which the carrier parses.
import vm from 'node:vm';

/** Node's decoration of a compile error: "<file>:<line>\n<source line>\n<caret>\n\nSyntaxError: ...". */
export function programSyntaxError(program: string, filename: string, offset: number, length: number, message: string): SyntaxError {
  const { line, column, text } = locate(program, offset);
  // V8 keeps tabs in the caret line so the caret lines up under tab-indented source.
  let indent = '';
  for (let index = 0; index < column; index++) indent += text[index] === '\t' ? '\t' : ' ';
  const error = new SyntaxError(message);
  error.stack = `${filename}:${line}\n${text}\n${indent}${'^'.repeat(Math.max(1, Math.min(length, text.length - column)))}\n\nSyntaxError: ${message}`;
  return error;
}

/**
 * The engine's SyntaxError for a program compiled on its own as a (strict) async function body,
 * with Node's location decoration and no stack frames; undefined when it compiles.
 */
export function engineSyntaxError(program: string, filename: string, strict: boolean): Error | undefined {
  try {
    new vm.Script(`${strict ? '"use strict";' : ''}(async () => {\n${program}\n})`, { filename, lineOffset: -1 });
    return undefined;
  } catch (error) {
    return withoutFrames(error as Error);
  }
}

/** Removes the "    at ..." frames after the message line; the source excerpt above it stays as it is. */
export function withoutFrames(error: Error): Error {
  const stack = error.stack;
  if (typeof stack !== 'string') return error;
  const lines = stack.split('\n');
  const messageLine = lines.findIndex((line) => line.startsWith(`${error.name}: `) || line === error.name);
  if (messageLine === -1) return error;
  error.stack = [...lines.slice(0, messageLine + 1), ...lines.slice(messageLine + 1).filter((line) => !/^\s+at /.test(line))].join('\n');
  return error;
}

/** Turns Acorn's error ("message (line:column)", with `pos`) into a located SyntaxError. */
export function acornSyntaxError(error: unknown, program: string, filename: string): SyntaxError {
  const { message, pos } = error as { message?: unknown; pos?: unknown };
  const text = typeof message === 'string' ? message.replace(/ \(\d+:\d+\)$/, '') : 'Invalid or unexpected token';
  return programSyntaxError(program, filename, typeof pos === 'number' ? pos : 0, 1, text);
}

const LINE_TERMINATOR = /\r\n|[\n\r\u2028\u2029]/g;

/** One-based line and zero-based column (UTF-16 units) of `offset`, as V8 counts them, with that line's text. */
function locate(source: string, offset: number): { line: number; column: number; text: string } {
  let line = 1;
  let lineStart = 0;
  LINE_TERMINATOR.lastIndex = 0;
  for (let match = LINE_TERMINATOR.exec(source); match !== null && match.index < offset; match = LINE_TERMINATOR.exec(source)) {
    line++;
    lineStart = match.index + match[0].length;
  }
  LINE_TERMINATOR.lastIndex = lineStart;
  const next = LINE_TERMINATOR.exec(source);
  const text = source.slice(lineStart, next === null ? source.length : next.index);
  return { line, column: offset - lineStart, text };
}
