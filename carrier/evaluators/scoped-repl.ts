// The scoped REPL evaluator (format 'scoped-repl'): every call is its own strict vm.Script in one
// retained context, starting with copies of the top-level names earlier calls left. Declaration
// scanning is in scoped-repl/declarations.ts, the retained names in scoped-repl/scope.ts, the
// generated source in scoped-repl/source.ts.
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { createProgramContext } from './scoped-repl/context.ts';
import { RESERVED_PREFIX, scanDeclarations, type Declarations } from './scoped-repl/declarations.ts';
import { ScopeChain, type CallPlan } from './scoped-repl/scope.ts';
import { generateCallSource } from './scoped-repl/source.ts';
import { acornSyntaxError, engineSyntaxError, programSyntaxError, withoutFrames } from './scoped-repl/syntax-errors.ts';
import { append, withPristineBuiltins } from '../hardening/intrinsics.ts';
import { createScriptImports } from '../imports/vm-imports.ts';
import type { Completion, EvaluationOptions, Evaluator, ImportSetup } from './types.ts';

export interface ScopedReplOptions {
  /**
   * Compile every call as strict code. Off, assignments to undeclared names create globals, `with`
   * works and sloppy block functions carry to later calls (Annex B).
   * @default true
   */
  strict?: boolean;
  /**
   * Let the program context compile code from strings (`eval`, `new Function`) and WebAssembly.
   * @default false
   */
  codeGeneration?: boolean;
  /**
   * Make the last top-level expression statement the completion value; off, every call completes
   * with undefined and no column moves.
   * @default true
   */
  finalExpression?: boolean;
}

/** What a generated script evaluates to: given the hooks, the call's async body. */
type CallFactory = (get: (name: string) => unknown, keep: (...readers: (() => unknown)[]) => void) => () => Promise<unknown>;

// The program realm is the context's, but main-realm objects (process, timers, fetch results) lead
// back to this realm's intrinsics: the completion path does not look up `then` after programs ran,
// and its box has no prototype to find one on.
const promiseThen = Promise.prototype.then;
const NativePromise = Promise;
const { apply } = Reflect;
const { setPrototypeOf } = Object;

/** Creates a scoped REPL environment: one context whose calls carry their top-level names forward. */
export function createScopedReplEvaluator(options: ScopedReplOptions = {}, setup?: ImportSetup): Evaluator {
  const strict = options.strict ?? true;
  const finalExpression = options.finalExpression ?? true;
  const { context, globalObject } = createProgramContext(options.codeGeneration ?? false);
  const scope = new ScopeChain();
  // The scoped REPL imports as vm-script does: asynchronous decisions are accepted.
  const imports = setup === undefined ? undefined : createScriptImports(setup, context, false, 'scoped-repl');
  /** The first call's working directory: relative `import()` specifiers resolve from it. */
  let importBase: string | undefined;
  let disposed = false;

  function compile(program: string, evaluation: EvaluationOptions, declarations: Declarations, plan: CallPlan, base: string): CallFactory {
    const { filename } = evaluation;
    const source = generateCallSource({
      program,
      strict: strict || declarations.useStrict,
      copies: plan.copies,
      kept: plan.kept,
      completion: finalExpression && evaluation.wantCompletion ? declarations.completion : undefined,
    });
    let script: vm.Script;
    try {
      const resource = scriptFilename(filename, base);
      script = new vm.Script(source, {
        filename: resource,
        lineOffset: -1,
        importModuleDynamically: imports === undefined ? vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER : imports.callback(resource, filename),
      });
    } catch (error) {
      throw engineSyntaxError(program, filename, strict) ?? withoutFrames(error as Error);
    }
    return script.runInContext(context) as CallFactory;
  }

  function start(program: string, evaluation: EvaluationOptions, base: string): Promise<Completion> {
    // Scanning and compiling run no program code; they use the built-ins as they were.
    const { plan, factory } = withPristineBuiltins(() => {
      const declarations = checkProgram(program, evaluation.filename, strict);
      const plan = scope.plan(declarations);
      return { plan, factory: compile(program, evaluation, declarations, plan, base) };
    });
    // Both hooks let go of the plan once the prologue has run: the call's closures keep these
    // hooks alive, and they should not also keep the copied values a second time.
    let pending: CallPlan | undefined = plan;
    let completion: (() => unknown) | undefined;
    const get = (name: string): unknown => pending?.values.get(name);
    // Called once by the generated prologue, before the program's first statement.
    const keep = (...readers: (() => unknown)[]): void => {
      if (pending === undefined) return;
      // No Array.prototype.slice: the prologue runs after the program's first line could replace it.
      const kept: (() => unknown)[] = [];
      for (let index = 1; index < readers.length; index++) append(kept, readers[index]!);
      scope.keep(pending, kept);
      completion = readers[0];
      pending = undefined;
    };
    const body = factory(get, keep)();
    return new NativePromise((resolve, reject) => {
      apply(promiseThen, body, [
        () => {
          // Not awaited: a Promise completion stays a Promise inside its box.
          const value = finalExpression && evaluation.wantCompletion ? completion?.() : undefined;
          resolve(setPrototypeOf({ value }, null) as Completion);
        },
        reject,
      ]);
    });
  }

  return {
    format: 'scoped-repl',
    globalObject,
    evaluate(program, evaluation) {
      if (disposed) return NativePromise.reject(new Error('the scoped REPL environment has been disposed'));
      importBase ??= evaluation.cwd;
      try {
        return start(program, evaluation, importBase);
      } catch (error) {
        return NativePromise.reject(error);
      }
    },
    lookup: (name) => scope.lookup(name),
    names: () => scope.names(),

    dispose() {
      disposed = true;
      scope.clear();
      imports?.dispose();
    },
  };
}

/** Scans a program, or throws the SyntaxError that describes why the scoped REPL cannot run it. */
function checkProgram(program: string, filename: string, strict: boolean): Declarations {
  if (program.startsWith('#!')) {
    throw programSyntaxError(program, filename, 0, 2, 'a scoped REPL program cannot start with #!');
  }
  const reserved = program.indexOf(RESERVED_PREFIX);
  if (reserved !== -1) {
    throw programSyntaxError(program, filename, reserved, RESERVED_PREFIX.length, `${RESERVED_PREFIX} is reserved for the scoped REPL's generated code`);
  }
  let declarations: Declarations;
  try {
    declarations = scanDeclarations(program, !strict);
  } catch (error) {
    throw engineSyntaxError(program, filename, strict) ?? acornSyntaxError(error, program, filename);
  }
  if (declarations.reservedIdentifier !== undefined) {
    throw programSyntaxError(program, filename, declarations.reservedIdentifier, 1, `${RESERVED_PREFIX} is reserved for the scoped REPL's generated code`);
  }
  if (declarations.topLevelReturn !== undefined) {
    throw programSyntaxError(
      program,
      filename,
      declarations.topLevelReturn,
      'return'.length,
      'Illegal return statement: a scoped REPL program cannot return; its last expression statement is its value',
    );
  }
  return declarations;
}

/**
 * The Script's filename is both the name in stack traces and, through Node's main-context loader,
 * the referrer of its `import()` calls. A program file in the first call's directory is its own
 * name. Any other becomes the query of a URL of that directory: relative specifiers still resolve
 * from it and frames still end with `<filename>:<line>:<column>`. (A sourceURL comment would name
 * frames without moving the referrer, but V8 then ignores the line offset that hides the prologue.)
 */
function scriptFilename(filename: string, importBase: string): string {
  const base = resolve(importBase);
  if (isAbsolute(filename) && dirname(filename) === base) return filename;
  const directory = pathToFileURL(base).href;
  return `${directory.endsWith('/') ? directory : `${directory}/`}?${filename}`;
}
