// Erasable TypeScript is stripped on the host with Node's own stripper, which blanks types in
// place so every line and column of the program stays where the author wrote it. The body is
// wrapped in an async function first because top-level `return` is a syntax error for a module.
import { stripTypeScriptTypes } from 'node:module';
import { parse, type Node } from 'acorn';
import { simple as walkSimple } from 'acorn-walk';
import type { ErrorInfo } from '../../carrier/protocol/messages.ts';

const PREFIX = 'async function __ptc_program__() {';
const SUFFIX = '\n}';

export type StripResult = { ok: true; code: string } | { ok: false; error: ErrorInfo };

let warned = false;

/** Strips erasable types from an async function body; non-erasable syntax becomes a located SyntaxError. */
export function stripTypes(program: string, filename: string): StripResult {
  if (isPlainJavaScript(program)) return { ok: true, code: program };
  try {
    const stripped = quietly(() => stripTypeScriptTypes(`${PREFIX}${program}${SUFFIX}`, { mode: 'strip' }));
    return { ok: true, code: stripped.slice(PREFIX.length, stripped.length - SUFFIX.length) };
  } catch (error) {
    const { code, message, stack } = error as { code?: string; message?: string; stack?: string };
    if (code !== 'ERR_INVALID_TYPESCRIPT_SYNTAX' && code !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') throw error;
    return { ok: false, error: locate(program, filename, String(message), String(stack), code) };
  }
}

// Loading Node's TypeScript parser costs ~65 ms per process; a program that already parses as
// JavaScript has no types to strip. The one construct both languages accept with different
// meanings is `a < b > (c)`, a comparison chain in JavaScript and a generic call in TypeScript;
// programs containing it go to the TypeScript parser.
function isPlainJavaScript(program: string): boolean {
  let ast: Node;
  try {
    ast = parse(`(async function () {\n${program}\n})`, { ecmaVersion: 'latest', sourceType: 'script' });
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

// Node decorates the error like a compile error: ":<line>", context lines, and a caret line under
// the offending span. The caret is the reliable part; its line is the one above it.
function locate(program: string, filename: string, message: string, stack: string, code: string): ErrorInfo {
  const unsupported = code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX';
  const info: ErrorInfo = {
    name: 'SyntaxError',
    message: unsupported ? `${message} (only erasable TypeScript is accepted: types, interfaces, casts and generics)` : message,
  };
  const lines = stack.split('\n');
  const header = /^:(\d+)$/.exec(lines[0] ?? '');
  const caretIndex = lines.findIndex((line, index) => index > 0 && /^\s*\^+\s*$/.test(line));
  if (header === null || caretIndex < 1) return info;
  const line = Number(header[1]);
  let column = lines[caretIndex]!.indexOf('^') + 1;
  if (line === 1) column -= PREFIX.length;
  const source = program.split('\n')[line - 1];
  if (source === undefined || column < 1) return info;
  info.location = { line, column };
  info.excerpt = `${source}\n${' '.repeat(column - 1)}${'^'.repeat(Math.max(1, lines[caretIndex]!.trim().length))}`;
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
