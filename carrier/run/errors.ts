// Turns whatever a program threw into plain data the host can trust: name, message, the stack
// frames that belong to the program, and the program line and column where it was thrown.
//
// Describing never throws and runs as little program code as it can: a Proxy is shown without
// touching its traps, a getter or toString that throws only loses that one field, and the stack is
// formatted by V8 itself even when the program installed its own Error.prepareStackTrace.
import { inspect as utilInspect, types } from 'node:util';
import {
  append, defineProperty, ErrorCtor, getOwnPropertyDescriptor, join, NumberCtor, regexpExec, setPrototypeOf, splitLines, StringCtor, stringIncludes,
  stringLastIndexOf, stringSlice,
} from '../hardening/intrinsics.ts';
import type { ErrorInfo, SourceLocation } from '../../wire/messages.ts';

const { isNativeError, isProxy } = types;
const FRAME = /^\s+at /;
const LOCATION = /^:(\d+):(\d+)/;
const SYNTAX_HEADER = /^(.*):(\d+)$/;
const CARET_LINE = /^\s*\^+\s*$/;
const PROXY_WRAPPER = /^Proxy\(([\s\S]*)\)$/;
const inspectOptions = { __proto__: null, depth: 4, customInspect: false, getters: false, showProxy: false } as const;

/** The Error constructors whose prepareStackTrace could format a program's error: this realm's and each evaluator's. */
const errorConstructors: object[] = [ErrorCtor];

/** Lets describeThrown bypass a prepareStackTrace the program sets in another realm; call before any program runs there. */
export function trustErrorRealm(globalObject: object): void {
  const descriptor = getOwnPropertyDescriptor(globalObject, 'Error');
  const constructor: unknown = descriptor === undefined ? undefined : descriptor.value;
  if (typeof constructor === 'function' && constructor !== ErrorCtor) append(errorConstructors, constructor);
}

/** Describes a thrown value; frames outside `filename` (carrier internals) are dropped. */
export function describeThrown(thrown: unknown, filename: string): ErrorInfo {
  try {
    return describe(thrown, filename);
  } catch {
    return { name: 'Error', message: 'Uncaught value that could not be described' };
  }
}

function describe(thrown: unknown, filename: string): ErrorInfo {
  if (!isErrorLike(thrown)) return { name: 'Error', message: `Uncaught ${describeValue(thrown, filename)}` };
  const name = safeString(() => thrown.name, 'Error');
  const message = safeString(() => thrown.message, '');
  const rawStack = nativeStack(thrown);
  const lines = splitLines(rawStack);
  const frames: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (regexpExec(FRAME, line) !== null && stringIncludes(line, filename)) append(frames, line);
  }
  // No prototype: the fields below are assigned, and Object.prototype may carry a program's setters.
  const info: ErrorInfo = setPrototypeOf({ name, message }, null);
  if (frames.length > 0) {
    info.stack = `${name}: ${message}\n${join(frames, '\n')}`;
    const location = frameLocation(frames[0]!, filename);
    if (location !== undefined) info.location = location;
  } else if (rawStack !== '') {
    info.stack = `${name}: ${message}`;
  }
  // `fetch failed` says nothing without its cause (the refused connection, the DNS failure).
  const causes = causeLines(thrown);
  if (causes.length > 0) info.stack = [info.stack ?? `${name}: ${message}`, ...causes].join('\n');
  const binding = safeString(() => (thrown as { binding?: unknown }).binding, '');
  const code = safeRead(() => (thrown as { code?: unknown }).code);
  if (name === 'BindingError' && binding !== '') info.binding = binding;
  if (typeof code === 'string' && code !== '') info.code = code;
  return info;
}

/** Describes a SyntaxError thrown while compiling the program, with the caret excerpt V8 prints. */
export function describeSyntaxError(error: unknown, filename: string): ErrorInfo {
  try {
    const name = safeString(() => (error as Error).name, 'SyntaxError');
    const message = safeString(() => (error as Error).message, '');
    const stack = nativeStack(error);
    // Node decorates compile errors: "<file>:<line>\n<source line>\n<spaces>^^^\n\nSyntaxError: ..."
    const lines = splitLines(stack);
    const header = regexpExec(SYNTAX_HEADER, lines[0] ?? '');
    const caretLine = lines[2] ?? '';
    const info: ErrorInfo = setPrototypeOf({ name, message }, null);
    if (header !== null && header[1] === filename && regexpExec(CARET_LINE, caretLine) !== null) {
      const line = NumberCtor(header[2]);
      const column = stringIndexOfCaret(caretLine) + 1;
      info.location = { line, column };
      info.excerpt = `${lines[1]}\n${trimEnd(caretLine)}`;
      info.stack = `${filename}:${line}\n${info.excerpt}\n\n${name}: ${message}`;
    } else {
      info.stack = `${name}: ${message}`;
    }
    return info;
  } catch {
    return describeThrown(error, filename);
  }
}

/** Whether `value` is a native error whose stack starts with `prefix` (a compile error's decoration). */
export function isDecoratedSyntaxError(value: unknown, prefix: string): boolean {
  if (typeof value !== 'object' || value === null || isProxy(value) || !isNativeError(value)) return false;
  return safeString(() => (value as Error).name, '') === 'SyntaxError' && stringSlice(nativeStack(value), 0, prefix.length) === prefix;
}

function stringIndexOfCaret(line: string): number {
  for (let index = 0; index < line.length; index++) if (line[index] === '^') return index;
  return -1;
}

function trimEnd(text: string): string {
  let end = text.length;
  while (end > 0 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return stringSlice(text, 0, end);
}

/** "[cause]: <name>: <message>" for each error in the cause chain, as Node's inspect labels them; a few levels deep. */
function causeLines(thrown: unknown): string[] {
  const lines: string[] = [];
  let current: unknown = thrown;
  for (let depth = 0; depth < 4; depth++) {
    let cause: unknown;
    try {
      if (typeof current !== 'object' || current === null || !('cause' in current)) break;
      cause = (current as { cause?: unknown }).cause;
    } catch {
      break;
    }
    const text = isErrorLike(cause) ? `${safeString(() => cause.name, 'Error')}: ${safeString(() => cause.message, '')}` : safeInspect(cause);
    lines.push(`${'  '.repeat(depth)}[cause]: ${text}`);
    current = cause;
  }
  return lines;
}

function frameLocation(frame: string, filename: string): SourceLocation | undefined {
  const at = stringLastIndexOf(frame, filename);
  const match = regexpExec(LOCATION, stringSlice(frame, at + filename.length));
  return match === null ? undefined : { line: NumberCtor(match[1]), column: NumberCtor(match[2]) };
}

// Proxies are never error-like: even `in` would run their traps.
function isErrorLike(value: unknown): value is Error {
  if (typeof value !== 'object' || value === null || isProxy(value)) return false;
  if (isNativeError(value)) return true;
  return 'message' in value && 'stack' in value;
}

/**
 * The error's stack as V8 formats it. Node hands stack formatting to Error.prepareStackTrace of the
 * error's realm and of the main realm; a program may have set either, so both are set aside while
 * the stack is first read (V8 formats it once, on that read).
 */
function nativeStack(error: unknown): string {
  const saved: Array<PropertyDescriptor | undefined> = [];
  for (let index = 0; index < errorConstructors.length; index++) {
    const constructor = errorConstructors[index]!;
    const descriptor = getOwnPropertyDescriptor(constructor, 'prepareStackTrace');
    append(saved, descriptor);
    if (descriptor === undefined || descriptor.configurable) {
      defineProperty(constructor, 'prepareStackTrace', { __proto__: null, value: undefined, writable: true, configurable: true } as PropertyDescriptor);
    }
  }
  try {
    return safeString(() => (error as Error).stack, '');
  } finally {
    for (let index = 0; index < errorConstructors.length; index++) {
      const descriptor = saved[index];
      const constructor = errorConstructors[index]!;
      if (descriptor === undefined) delete (constructor as { prepareStackTrace?: unknown }).prepareStackTrace;
      else if (descriptor.configurable) defineProperty(constructor, 'prepareStackTrace', { __proto__: null, ...descriptor } as PropertyDescriptor);
    }
  }
}

function safeRead(read: () => unknown): unknown {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** A string field: a string as it is, another primitive converted, an object inspected; the fallback when reading throws. */
function safeString(read: () => unknown, fallback: string): string {
  try {
    const value = read();
    if (value === undefined || value === null) return fallback;
    if (typeof value === 'string') return value;
    if (typeof value === 'object' || typeof value === 'function' || typeof value === 'symbol') return safeInspect(value);
    return StringCtor(value);
  } catch {
    return fallback;
  }
}

/**
 * A thrown value that is not an error, as util.inspect shows it without running its code: a Proxy
 * says so (its target is shown, its traps are not called), and stack lines of errors inside it
 * keep only the program's frames.
 */
function describeValue(value: unknown, filename: string): string {
  const shown = safeInspect(value);
  const lines = splitLines(shown);
  const kept: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (regexpExec(FRAME, line) === null || stringIncludes(line, filename)) append(kept, line);
  }
  let text = join(kept, '\n');
  const proxy = (typeof value === 'object' || typeof value === 'function') && value !== null && isProxy(value);
  if (!proxy || text === '<Revoked Proxy>') return text;
  // Node 26's inspect wraps a Proxy's target as `Proxy(...)` even with showProxy off; the message
  // reads the same on every carrier Node.
  const wrapped = regexpExec(PROXY_WRAPPER, text);
  if (wrapped !== null) text = wrapped[1]!;
  return `Proxy ${text}`;
}

function safeInspect(value: unknown): string {
  try {
    return utilInspect(value, inspectOptions);
  } catch {
    return '<uninspectable value>';
  }
}
