// Turns whatever a program threw into plain data the host can trust: name, message, the stack
// frames that belong to the program, and the program line and column where it was thrown.
import { inspect as utilInspect, types } from 'node:util';
import type { ErrorInfo, SourceLocation } from './protocol/messages.ts';

/** Describes a thrown value; frames outside `filename` (carrier internals) are dropped. */
export function describeThrown(thrown: unknown, filename: string): ErrorInfo {
  if (!isErrorLike(thrown)) {
    return { name: 'Error', message: `Uncaught ${safeInspect(thrown)}` };
  }
  const name = safeString(() => thrown.name, 'Error');
  const message = safeString(() => thrown.message, '');
  const rawStack = safeString(() => thrown.stack, '');
  const frames = rawStack.split('\n').filter((line) => /^\s+at /.test(line) && line.includes(filename));
  const info: ErrorInfo = { name, message };
  if (frames.length > 0) {
    info.stack = [`${name}: ${message}`, ...frames].join('\n');
    const location = frameLocation(frames[0]!, filename);
    if (location !== undefined) info.location = location;
  } else if (rawStack !== '') {
    info.stack = `${name}: ${message}`;
  }
  // `fetch failed` says nothing without its cause (the refused connection, the DNS failure).
  const causes = causeLines(thrown);
  if (causes.length > 0) info.stack = [info.stack ?? `${name}: ${message}`, ...causes].join('\n');
  const binding = safeString(() => (thrown as { binding?: unknown }).binding, '');
  const code = safeString(() => (thrown as { code?: unknown }).code, '');
  if (name === 'BindingError' && binding !== '') info.binding = binding;
  if (code !== '' && typeof (thrown as { code?: unknown }).code === 'string') info.code = code;
  return info;
}

/** Describes a SyntaxError thrown while compiling the program, with the caret excerpt V8 prints. */
export function describeSyntaxError(error: unknown, filename: string): ErrorInfo {
  const name = safeString(() => (error as Error).name, 'SyntaxError');
  const message = safeString(() => (error as Error).message, '');
  const stack = safeString(() => (error as Error).stack, '');
  // Node decorates compile errors: "<file>:<line>\n<source line>\n<spaces>^^^\n\nSyntaxError: ..."
  const lines = stack.split('\n');
  const header = /^(.*):(\d+)$/.exec(lines[0] ?? '');
  const caretLine = lines[2] ?? '';
  const info: ErrorInfo = { name, message };
  if (header !== null && header[1] === filename && /^\s*\^+\s*$/.test(caretLine)) {
    const line = Number(header[2]);
    const column = caretLine.indexOf('^') + 1;
    info.location = { line, column };
    info.excerpt = `${lines[1]}\n${caretLine.trimEnd()}`;
    info.stack = `${filename}:${line}\n${info.excerpt}\n\n${name}: ${message}`;
  } else {
    info.stack = `${name}: ${message}`;
  }
  return info;
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
  const at = frame.lastIndexOf(filename);
  const match = /^:(\d+):(\d+)/.exec(frame.slice(at + filename.length));
  return match === null ? undefined : { line: Number(match[1]), column: Number(match[2]) };
}

function isErrorLike(value: unknown): value is Error {
  if (types.isNativeError(value)) return true;
  return typeof value === 'object' && value !== null && 'message' in value && 'stack' in value;
}

function safeString(read: () => unknown, fallback: string): string {
  try {
    const value = read();
    return value === undefined || value === null ? fallback : String(value);
  } catch {
    return fallback;
  }
}

function safeInspect(value: unknown): string {
  try {
    return utilInspect(value, { depth: 4 });
  } catch {
    return '<uninspectable value>';
  }
}
