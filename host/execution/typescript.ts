// Erasable TypeScript is stripped on the host with Node's own stripper, which blanks types in
// place so every line and column of the program stays where the author wrote it. A function body
// is wrapped in an async function first because top-level `return` is a syntax error outside one.
// Script and REPL programs are stripped as they are: inside an async function `await` is always
// the operator, while in their sloppy code `typeof await` reads a variable named await.
import * as nodeModule from 'node:module';
import { parse, type Node, type Options } from 'acorn';
import { simple as walkSimple } from 'acorn-walk';
import type { ErrorInfo, ProgramFormat } from '../../wire/messages.ts';

const PREFIX = 'async function __ptc_program__() {';
const SUFFIX = '\n}';

export type StripResult = { ok: true; code: string } | { ok: false; error: ErrorInfo };

let warned = false;

/** Strips erasable types from a program of the given format; non-erasable syntax becomes a located SyntaxError. */
export function stripTypes(program: string, filename: string, format: ProgramFormat = 'async-function'): StripResult {
  const body = format === 'async-function';
  if (isPlainJavaScript(program, body)) return { ok: true, code: program };
  const prefix = body ? PREFIX : '';
  const suffix = body ? SUFFIX : '';
  try {
    const stripped = quietly(() => nodeModule.stripTypeScriptTypes(`${prefix}${program}${suffix}`, { mode: 'strip' }));
    return { ok: true, code: stripped.slice(prefix.length, stripped.length - suffix.length) };
  } catch (error) {
    const { code, message, stack } = error as { code?: string; message?: string; stack?: string };
    if (code !== 'ERR_INVALID_TYPESCRIPT_SYNTAX' && code !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') throw error;
    const info = locate(program, filename, String(message), String(stack), code, prefix.length);
    // Scripts end in a completion value as REPL input does; a function body needs `return` instead.
    if (!body && readsAsObjectLiteral(program)) {
      info.message += ' (a leading { ... } is a block: wrap an object literal in parentheses to make it the value)';
      if (info.stack !== undefined) info.stack = `${info.stack.slice(0, info.stack.lastIndexOf('SyntaxError: '))}SyntaxError: ${info.message}`;
    }
    return { ok: false, error: info };
  }
}

// Script and REPL programs follow the reference: `{ a: 1 }` is a block. When the failing program would have
// parsed in parentheses, the author meant an object, and the message says how to get one.
function readsAsObjectLiteral(program: string): boolean {
  if (!/^\s*\{/.test(program)) return false;
  try {
    quietly(() => nodeModule.stripTypeScriptTypes(`(${program})`, { mode: 'strip' }));
    return true;
  } catch {
    return false;
  }
}

// Loading Node's TypeScript parser costs ~65 ms per process; a program that already parses as
// JavaScript has no types to strip. The one construct both languages accept with different
// meanings is `a < b > (c)`, a comparison chain in JavaScript and a generic call in TypeScript;
// programs containing it go to the TypeScript parser.
// Scripts and REPL input are parsed as the carrier's evaluators read them: sloppy unless they say
// otherwise, top-level await allowed, and a top-level `return` left for the evaluator to refuse.
const SCRIPT_OPTIONS: Options = { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true, allowReturnOutsideFunction: true };

function isPlainJavaScript(program: string, body: boolean): boolean {
  let ast: Node;
  try {
    ast = body ? parse(`(async function () {\n${program}\n})`, { ecmaVersion: 'latest', sourceType: 'script' }) : parseScript(program);
  } catch {
    return false;
  }
  let ambiguous = false;
  walkSimple(ast, {
    BinaryExpression(node) {
      const { operator, left } = node as unknown as { operator: string; left: { type: string; operator?: string } };
      if (operator === '>' && left.type === 'BinaryExpression' && left.operator === '<') ambiguous = true;
    },
  });
  return !ambiguous;
}

// `typeof await` reads a variable in sloppy code, which acorn accepts only without top-level await.
function parseScript(program: string): Node {
  try {
    return parse(program, SCRIPT_OPTIONS);
  } catch {
    return parse(program, { ...SCRIPT_OPTIONS, allowAwaitOutsideFunction: false });
  }
}

// Node decorates the error like a compile error: ":<line>", context lines, and a caret line under
// the offending span. The caret is the reliable part; its line is the one above it. A span over
// several lines has no caret: its lines are marked "  > " instead, the first being the header's.
// A span at the end of the input is empty and has no caret either, and in a function body the
// wrapper's closing brace may be where the parser noticed the input had ended.
function locate(program: string, filename: string, message: string, stack: string, code: string, prefixLength: number): ErrorInfo {
  const unsupported = code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX';
  const info: ErrorInfo = {
    name: 'SyntaxError',
    message: unsupported ? `${message} (only erasable TypeScript is accepted: types, interfaces, casts and generics)` : message,
  };
  const lines = stack.split('\n');
  const header = /^:(\d+)$/.exec(lines[0] ?? '');
  if (header === null) return info;
  const line = Number(header[1]);
  const programLines = program.split('\n');
  const caretIndex = lines.findIndex((text, index) => index > 0 && /^\s*\^+\s*$/.test(text));
  if (caretIndex >= 1) {
    let column = lines[caretIndex]!.indexOf('^') + 1;
    if (line === 1) column -= prefixLength;
    const source = programLines[line - 1];
    if (source !== undefined && column >= 1) return located(info, filename, line, column, source, Math.max(1, lines[caretIndex]!.trim().length));
  }
  if (lines.some((text) => text.startsWith('  > '))) {
    const source = programLines[line - 1];
    if (source === undefined || source.trim() === '') return info;
    const column = source.length - source.trimStart().length + 1;
    return located(info, filename, line, column, source, source.trimEnd().length - column + 1);
  }
  // No span to show: the parser met the end of the input. The caret goes just after the program's
  // last character that is not white space, unless the parser named a line before that one.
  let last = programLines.length - 1;
  while (last > 0 && programLines[last]!.trim() === '') last--;
  if (line < last + 1) return info;
  const source = programLines[last]!;
  return located(info, filename, last + 1, source.trimEnd().length + 1, source, 1);
}

function located(info: ErrorInfo, filename: string, line: number, column: number, source: string, width: number): ErrorInfo {
  info.location = { line, column };
  info.excerpt = `${source}\n${' '.repeat(column - 1)}${'^'.repeat(width)}`;
  // The same shape as a syntax error V8 reports in the carrier.
  info.stack = `${filename}:${line}\n${info.excerpt}\n\nSyntaxError: ${info.message}`;
  return info;
}

// The stripper announces itself once per process with an ExperimentalWarning; that notice is the
// runtime's business, not something a library user or CLI user should see.
function quietly<T>(strip: () => T): T {
  if (warned) return strip();
  warned = true;
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (text.includes('stripTypeScriptTypes')) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return strip();
  } finally {
    process.emitWarning = emitWarning;
  }
}
