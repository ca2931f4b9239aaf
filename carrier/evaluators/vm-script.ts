// vm-script programs: each evaluation compiles one vm.Script and runs it in the evaluator's own vm
// context, whose global carries Node's globals. Script-level declarations live in that context, so
// they survive from one evaluation to the next; the completion value is awaited. Source with
// top-level await is lowered first (await-lowering.ts); everything else compiles natively.
import vm from 'node:vm';
import { basename, dirname, join, resolve } from 'node:path';
import type { AnyNode } from 'acorn';
import { recursive, type RecursiveVisitors } from 'acorn-walk';
import { lowerTopLevelAwait, syntaxErrorPosition, unsupportedUsing, withPosition } from './await-lowering.ts';
import { apply, defineProperty, withPristineBuiltins } from '../hardening/intrinsics.ts';
import { defineLazyGlobal } from './lazy-global.ts';
import { PhaseParser } from './phase-parser.ts';
import { createScriptImports, type ScriptImports } from '../imports/vm-imports.ts';
import type { Completion, EvaluationOptions, Evaluator, ImportSetup } from './types.ts';

// Captured before any program runs: awaiting the lowered arrow's promise must not go through a
// `then` the program replaced.
const promiseThen = Promise.prototype.then;
const NativePromise = Promise;

/** Creates an evaluator with one new vm context that keeps Script declarations between evaluations. */
export function createVmScriptEvaluator(setup?: ImportSetup): Evaluator {
  const context = vm.createContext();
  const globalObject = vm.runInContext('globalThis', context) as Record<string, unknown>;
  installNodeGlobals(globalObject);
  const imports = setup === undefined ? undefined : createScriptImports(setup, context, false, 'vm-script');
  let disposed = false;
  return {
    format: 'vm-script',
    globalObject,
    async evaluate(program: string, options: EvaluationOptions): Promise<Completion> {
      if (disposed) throw new Error('vm-script evaluator: evaluate() called after dispose()');
      // Compiling runs no program code; acorn and the lowering use the built-ins as they were.
      const { script, lowered } = withPristineBuiltins(() => compileScript(program, options, imports));
      const completion: unknown = script.runInContext(context, { displayErrors: false });
      // The program's work is awaited even when its value is not wanted.
      const value = lowered ? await unbox(completion) : await completion;
      // A null prototype: resolving this promise must not find a `then` on Object.prototype.
      return { __proto__: null, value: options.wantCompletion ? value : undefined } as Completion;
    },
    lookup: (name) => lexicalValue(context, name),

    dispose() {
      disposed = true;
      imports?.dispose();
    },
  };
}

/**
 * Defines the main realm's Node globals (process, Buffer, timers, URL, fetch, structuredClone, …)
 * on a context global, as Node's REPL does for `useGlobal: false`: names the context already has
 * keep its own builtins, except `console`, whose context version only reaches an attached inspector.
 * Each is copied on first use (lazy-global.ts).
 */
function installNodeGlobals(contextGlobal: Record<string, unknown>): void {
  const builtins = new Set(Object.getOwnPropertyNames(contextGlobal));
  builtins.delete('console');
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (builtins.has(name)) continue;
    defineLazyGlobal(contextGlobal, name, (descriptor) => ('value' in descriptor ? descriptor : ownAccessor(contextGlobal, name, descriptor)));
  }
  Object.defineProperty(contextGlobal, 'global', { value: contextGlobal, writable: true, configurable: true, enumerable: true });
}

// Node's accessor globals (process, Buffer, crypto, performance, …) keep their value in closure
// state; the REPL's copied setter would let `process = 1` in a program replace the carrier's own
// `process`. Reads go to the main realm, and an assignment shadows the name in the context only.
function ownAccessor(contextGlobal: object, name: string, descriptor: PropertyDescriptor): PropertyDescriptor {
  const { get, set, enumerable, configurable } = descriptor;
  return {
    enumerable,
    configurable,
    get: get === undefined ? undefined : () => apply(get, globalThis, []),
    set: set === undefined ? undefined : (value: unknown) => {
      defineProperty(contextGlobal, name, { __proto__: null, value, writable: true, configurable: true, enumerable: enumerable ?? false } as PropertyDescriptor);
    },
  };
}

/** Resolves a lowered program's completion box, `{ value }` or undefined, to the awaited value. */
async function unbox(pending: unknown): Promise<unknown> {
  const box = await new NativePromise<{ value: unknown } | undefined>((resolve, reject) => {
    apply(promiseThen, pending, [resolve, reject]);
  });
  return box === undefined ? undefined : await box.value;
}

interface CompiledScript {
  script: vm.Script;
  /** Whether the Script is a lowered program, whose completion is a promise of a completion box. */
  lowered: boolean;
}

/** Compiles a program; throws a SyntaxError whose stack is the caret excerpt for invalid source. */
function compileScript(program: string, options: EvaluationOptions, imports: ScriptImports | undefined): CompiledScript {
  const names = scriptNames(options.filename, options.cwd);
  let lowered: string | undefined;
  try {
    lowered = lowerTopLevelAwait(program)?.source;
  } catch (error) {
    const position = syntaxErrorPosition(error);
    if (position === undefined) throw error;
    throw decorate(error as SyntaxError, program, position, options.filename);
  }
  try {
    const script = new vm.Script((lowered ?? program) + names.suffix, {
      filename: names.resource,
      importModuleDynamically: imports === undefined ? vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER : imports.callback(names.resource, options.filename),
    });
    return { script, lowered: lowered !== undefined };
  } catch (error) {
    if (lowered !== undefined) throw engineError(error, names.resource, options.filename);
    throw compileFailure(error, program, names.resource, options.filename);
  }
}

/** What to report for a program that did not compile natively (and was not lowered). */
function compileFailure(error: unknown, program: string, resource: string, filename: string): unknown {
  const unsupported = findUnsupportedSyntax(program);
  if (unsupported !== undefined) return decorate(unsupported, program, syntaxErrorPosition(unsupported)!, filename);
  // A Script reports top-level `await x` as the first error whatever else is wrong, so a program
  // the lowering could not parse is also compiled as an async function body. The engine stops at
  // the first error it meets: the reading of `await` (operator or identifier) that got further is
  // the program's, and its diagnostic is the one to show.
  const asBody = program.includes('await') ? asyncBodyError(program, resource) : undefined;
  const later = asBody !== undefined && compareLocations(asBody, error) > 0;
  return engineError(later ? asBody : error, resource, filename);
}

// The body starts on its own line and lineOffset cancels the wrapper's, so lines and columns are
// the program's (as in async-function.ts).
function asyncBodyError(program: string, resource: string): unknown {
  const text = program.startsWith('#!') ? `//${program.slice(2)}` : program;
  try {
    new vm.Script(`(async () => {\n${text}\n})`, { filename: resource, lineOffset: -1 });
    return undefined;
  } catch (error) {
    return error;
  }
}

/** Orders two compile errors by the line and caret column of their decorated stacks. */
function compareLocations(a: unknown, b: unknown): number {
  const [lineA, columnA] = stackLocation(a);
  const [lineB, columnB] = stackLocation(b);
  return lineA !== lineB ? lineA - lineB : columnA - columnB;
}

function stackLocation(error: unknown): [number, number] {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : '';
  const match = /^.*:(\d+)\n.*\n( *)\^/.exec(stack);
  return match === null ? [0, 0] : [Number(match[1]), match[2]!.length];
}

interface ScriptNames {
  /** The Script's resource name: the referrer of its relative `import()` specifiers. */
  resource: string;
  /** Appended source naming the program file in stack traces when the resource name cannot. */
  suffix: string;
}

// USE_MAIN_CONTEXT_DEFAULT_LOADER resolves `import("./x.mjs")` against the Script's filename, so
// that name must sit in cwd. When the program file lives elsewhere the Script is named after cwd
// and a sourceURL comment (after the last line, so no line moves) puts the program file back in
// stack frames. V8 ignores a sourceURL with whitespace or quotes; such a file keeps its own name.
function scriptNames(filename: string, cwd: string): ScriptNames {
  const directory = resolve(cwd);
  if (dirname(filename) === directory || /[\s'"]/.test(filename)) return { resource: filename, suffix: '' };
  return { resource: join(directory, basename(filename)), suffix: `\n//# sourceURL=${filename}` };
}

/**
 * The engine's compile error with its stack cut to the caret excerpt and message: no compiler or
 * evaluator frames, and the program file named where the Script carried the cwd name.
 */
function engineError(error: unknown, resource: string, filename: string): unknown {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return error;
  let stack = error.stack;
  const frames = stack.search(/\n\s+at /);
  if (frames !== -1) stack = stack.slice(0, frames);
  if (resource !== filename && stack.startsWith(`${resource}:`)) stack = filename + stack.slice(resource.length);
  error.stack = stack;
  return error;
}

/** Gives a SyntaxError found by this runtime the stack V8 gives compile errors: file:line, excerpt, caret. */
function decorate(error: SyntaxError, program: string, position: number, filename: string): SyntaxError {
  const { line, column, text } = locate(program, position);
  const width = Math.max(1, Math.min(tokenLength(program, position), text.length - column));
  error.stack = `${filename}:${line}\n${text}\n${' '.repeat(column)}${'^'.repeat(width)}\n\nSyntaxError: ${error.message}`;
  return error;
}

const LINE_BREAK = /\r\n?|[\n\u2028\u2029]/g;

function locate(program: string, position: number): { line: number; column: number; text: string } {
  let line = 1;
  let start = 0;
  for (const match of program.matchAll(LINE_BREAK)) {
    if (match.index >= position) break;
    line++;
    start = match.index + match[0].length;
  }
  const rest = program.slice(start);
  const end = rest.search(LINE_BREAK);
  return { line, column: position - start, text: end === -1 ? rest : rest.slice(0, end) };
}

function tokenLength(program: string, position: number): number {
  const word = /^(?:await\s+using|[A-Za-z_$][\w$]*)/.exec(program.slice(position));
  return word === null ? 1 : word[0].length;
}

// The block that wraps a program for the diagnosis parse: statements directly inside it are the
// program's top level, where acorn accepts `using` (its message for a Script's top level is generic).
const BLOCK_OPEN = '{';

/**
 * Explains why a program that failed native compilation is not a vm-script program: the first
 * top-level return, static import/export or top-level `using`, as a SyntaxError carrying its source
 * position. Undefined when none is found (the engine's own diagnostic is then the right one).
 */
function findUnsupportedSyntax(program: string): SyntaxError | undefined {
  const text = program.startsWith('#!') ? `//${program.slice(2)}` : program;
  let statements: AnyNode[];
  try {
    statements = PhaseParser.parse(`${BLOCK_OPEN}${text}\n}`, {
      ecmaVersion: 'latest',
      allowReturnOutsideFunction: true,
      allowImportExportEverywhere: true,
      allowAwaitOutsideFunction: true,
    }).body;
  } catch {
    return undefined;
  }
  // A stray `}` in the program would close the wrapping block early; its top level is then unknown.
  const block = statements[0];
  if (statements.length !== 1 || block?.type !== 'BlockStatement') return undefined;
  let first: SyntaxError | undefined;
  let firstPosition = Infinity;
  const report = (node: AnyNode, error: (position: number) => SyntaxError) => {
    const position = node.start - BLOCK_OPEN.length;
    if (position < firstPosition) [first, firstPosition] = [error(position), position];
  };
  recursive(block, { block, report }, diagnosisVisitors);
  return first;
}

interface Diagnosis {
  block: AnyNode;
  report(node: AnyNode, error: (position: number) => SyntaxError): void;
}

const unsupported = (message: string) => (position: number) => withPosition(new SyntaxError(message), position);

const returnNotSupported = unsupported('top-level return is not supported in vm-script programs; the final expression is the result');
const importNotSupported = unsupported('static import is not supported in vm-script programs; use `await import(specifier)`');
const exportNotSupported = unsupported('export is not supported in vm-script programs; top-level declarations stay in the context and the final expression is the result');
const skip = () => {};

const diagnosisVisitors: RecursiveVisitors<Diagnosis> = {
  FunctionDeclaration: skip,
  FunctionExpression: skip,
  ArrowFunctionExpression: skip,
  StaticBlock: skip,
  MethodDefinition(node, state, c) {
    if (node.computed) c(node.key, state);
  },
  PropertyDefinition(node, state, c) {
    if (node.computed) c(node.key, state);
  },
  ReturnStatement(node, state) {
    state.report(node, returnNotSupported);
  },
  ImportDeclaration(node, state) {
    state.report(node, importNotSupported);
  },
  ExportNamedDeclaration(node, state) {
    state.report(node, exportNotSupported);
  },
  ExportDefaultDeclaration(node, state) {
    state.report(node, exportNotSupported);
  },
  ExportAllDeclaration(node, state) {
    state.report(node, exportNotSupported);
  },
  BlockStatement(node, state, c) {
    for (const statement of node.body) {
      if (node === state.block && statement.type === 'VariableDeclaration' && (statement.kind === 'using' || statement.kind === 'await using')) {
        const { kind } = statement;
        state.report(statement, (position) => unsupportedUsing(kind, position));
      }
      c(statement, state);
    }
  },
};

/** A Script-level declaration's value: reading a declared name runs no program code (the caller has
 * ruled out global accessors and proxies); an undeclared or uninitialized one throws. */
export function lexicalValue(context: vm.Context, name: string): { value: unknown } | undefined {
  try {
    return { value: vm.runInContext(name, context) };
  } catch {
    return undefined;
  }
}
