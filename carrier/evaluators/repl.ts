// Node's own REPL evaluator (format 'repl'). A REPLServer on private streams is driven through its
// default eval, so Node's declaration rules, top-level await lowering, non-strict globals and
// cwd-relative dynamic import apply unchanged. The server reports runtime errors (thrown, rejected
// by top-level await, or thrown by callbacks the program scheduled) to its error handler rather
// than to the eval callback, so that handler settles the evaluation too. Node 26 calls the
// `handleError` option for them; Node 20 to 25 emit them on the server's own domain.
import { AsyncLocalStorage } from 'node:async_hooks';
import { lexicalValue } from './vm-script.ts';
import domain from 'node:domain';
import repl from 'node:repl';
import { PassThrough } from 'node:stream';
import { types } from 'node:util';
import vm from 'node:vm';
import { canInterceptReplImports, installReplImports } from '../imports/repl-hooks.ts';
import type { Completion, EvaluationOptions, Evaluator, ImportSetup } from './types.ts';

interface Evaluation {
  readonly filename: string;
  settled: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

// Node's own test for wrapping input in parentheses (isObjectLiteral in internal/repl/utils).
const STARTS_WITH_BRACE = /^\s*{/;
const FRAME_LINE = /^\s+at\s.*(?:\n|$)/gm;
const { isExtensible } = Object;
/** The wrapper async-function.ts compiles; lineOffset -1 keeps program lines and columns. */
const ASYNC_PREFIX = '(async function () {\n';

/** Creates Node's REPL evaluator: one retained context, Node REPL semantics per evaluation. */
export function createNodeReplEvaluator(setup?: ImportSetup): Evaluator {
  if (setup !== undefined && !canInterceptReplImports()) {
    throw new Error(`an import policy or handler needs module.registerHooks or module.register (Node 20.6 or later) for repl programs; this carrier runs Node ${process.version}`);
  }
  const input = new PassThrough();
  const output = new PassThrough();
  // Prompts and the REPL's "Uncaught ..." reports land here and are dropped.
  output.resume();
  output.on('error', () => {});
  let reportError: (error: unknown) => boolean = () => false;
  const server = repl.start({
    input,
    output,
    prompt: '',
    terminal: false,
    useGlobal: false,
    ignoreUndefined: true,
    preview: false,
    historySize: 0,
    // The writer only formats the REPL's own error reports, which nobody reads; the default
    // would run a thrown value's util.inspect.custom.
    writer: () => '',
    // Node 26: the evaluation takes the error as thrown; 'ignore' skips the REPL's own report, and
    // 'unhandled' makes an error no evaluation takes an uncaught exception of the process.
    handleError(error: unknown): 'ignore' | 'unhandled' {
      return reportError(error) ? 'ignore' : 'unhandled';
    },
  } as repl.ReplOptions);
  const internals = server as unknown as { _domain?: unknown; _userErrorHandler?: unknown };
  const replDomain = internals._domain instanceof domain.Domain ? internals._domain : undefined;
  if (replDomain === undefined && typeof internals._userErrorHandler !== 'function') {
    server.close();
    throw new Error('node:repl reports errors neither to a handler nor to a domain; this Node version is not supported');
  }

  const context = server.context;
  let importingFile = '';
  let uninstallImports = (): void => {};
  try {
    if (setup !== undefined) uninstallImports = installReplImports(setup, () => importingFile, context);
  } catch (error) {
    server.close();
    throw error;
  }
  // `_` and `_error` become ordinary globals: nothing sets them and assignments keep their value.
  delete context._;
  delete context._error;
  // The REPL's console writes to its (private) output; programs print through the process streams.
  Object.defineProperty(context, 'console', { value: console, writable: true, configurable: true });

  const current = new AsyncLocalStorage<Evaluation>();
  const unsettled = new Set<Evaluation>();
  let disposed = false;

  // Errors thrown by the program, by its top-level await, and by callbacks it scheduled. One from a
  // callback of an evaluation that has already settled is not an evaluation's: it goes on as an
  // uncaught exception of the process, whose handler (the carrier's) drops it or ends the process
  // as the reference requires, as it does for the other formats' callbacks.
  // On a domain, the REPL's own report, which runs between these two listeners, trims the stack of a native
  // error (all frames of an anonymous callback or of a SyntaxError); a stack that names the
  // program file is put back, since the carrier takes the program's frames and location from it.
  let reported: { error: Error; stack: string; filename: string } | undefined;
  let detachDomainListener = (): void => {};
  const onDomainError = (error: unknown): boolean => {
    const evaluation = current.getStore();
    if (evaluation === undefined || evaluation.settled) return false;
    reported = undefined;
    if (types.isNativeError(error)) {
      try {
        const stack = error.stack;
        if (typeof stack === 'string') reported = { error, stack, filename: evaluation.filename };
      } catch {
        // A stack getter that throws is the REPL's to meet.
      }
    }
    evaluation.reject(error);
    return true;
  };
  const afterReplReport = (error: unknown): void => {
    const saved = reported;
    reported = undefined;
    if (saved === undefined || saved.error !== error || !saved.stack.includes(saved.filename)) return;
    try {
      if (saved.error.stack !== saved.stack) saved.error.stack = saved.stack;
    } catch {
      // A stack the program made unwritable stays as the REPL left it.
    }
  };
  if (replDomain === undefined) {
    reportError = (error) => {
      const evaluation = current.getStore();
      if (evaluation !== undefined) dropReplSyntaxFrames(error, evaluation.filename);
      return onDomainError(error);
    };
  } else {
    // A domain that handles an error keeps it from the process: one no evaluation takes is handed on.
    const onError = (error: unknown): void => {
      if (!onDomainError(error)) process.emit('uncaughtException', error as Error, 'uncaughtException');
    };
    replDomain.prependListener('error', onError);
    replDomain.on('error', afterReplReport);
    guardDomainMarking(replDomain, onError);
    detachDomainListener = () => replDomain.removeListener('error', onError);
  }

  return {
    format: 'repl',
    globalObject: context,

    evaluate(program: string, options: EvaluationOptions): Promise<Completion> {
      return new Promise((resolve, reject) => {
        if (disposed) {
          reject(new Error('The REPL evaluator has been disposed'));
          return;
        }
        importingFile = options.filename;
        const evaluation: Evaluation = {
          filename: options.filename,
          settled: false,
          resolve(value) {
            if (evaluation.settled) return;
            evaluation.settled = true;
            unsettled.delete(evaluation);
            // Boxed: resolving with a Promise completion would await it, and REPL results are not awaited.
            resolve({ value });
          },
          reject(error) {
            if (evaluation.settled) return;
            evaluation.settled = true;
            unsettled.delete(evaluation);
            reject(error);
          },
        };
        unsettled.add(evaluation);
        current.run(evaluation, () => {
          try {
            server.eval(replInput(program), context, options.filename, (error, value) => {
              if (error === null) evaluation.resolve(value);
              else evaluation.reject(compileError(error, program, options.filename));
            });
          } catch (error) {
            // Only the REPL's own error report can throw here (a thrown value whose property
            // reads throw); onDomainError has already rejected with the program's value.
            evaluation.reject(error);
          } finally {
            // domain.bind does not exit the domain when the bound function throws.
            if (replDomain !== undefined && (process as { domain?: unknown }).domain === replDomain) replDomain.exit();
          }
        });
      });
    },

    lookup: (name: string) => lexicalValue(context, name),

    dispose(): void {
      if (disposed) return;
      disposed = true;
      uninstallImports();
      const error = new Error('The REPL evaluator was disposed before the program settled');
      for (const evaluation of unsettled) evaluation.reject(error);
      reportError = () => false;
      detachDomainListener();
      replDomain?.removeListener('error', afterReplReport);
      server.close();
      input.destroy();
      output.destroy();
    },
  };
}

/**
 * node:domain marks an error thrown inside it (defineProperty(er, 'domain'), er.domainThrown = true)
 * before any listener runs, and a failure there is fatal to the process: a frozen object, a Proxy
 * whose traps throw or a revoked one, thrown from a callback, would end the carrier with exit code 7.
 * Such a value goes to the evaluation's own listener instead, unmarked.
 */
function guardDomainMarking(replDomain: domain.Domain, report: (error: unknown) => void): void {
  const target = replDomain as unknown as { _errorHandler(error: unknown): boolean };
  const errorHandler = target._errorHandler;
  const unmarkable = (error: unknown): boolean =>
    ((typeof error === 'object' && error !== null) || typeof error === 'function') && (types.isProxy(error) || !isExtensible(error));
  Object.defineProperty(target, '_errorHandler', {
    __proto__: null,
    configurable: true,
    writable: true,
    value(this: domain.Domain, error: unknown): boolean {
      if (!unmarkable(error)) {
        try {
          return Reflect.apply(errorHandler, this, [error]) as boolean;
        } catch (failure) {
          // A listener that rethrows is the domain's business; a value that could not be marked is not.
          if (failure === error) throw failure;
        }
      }
      while ((process as { domain?: unknown }).domain === replDomain) replDomain.exit();
      report(error);
      return true;
    },
  } as PropertyDescriptor);
}

/**
 * What Node's own report did to a SyntaxError V8 raised while running the input (a let, const or
 * class redeclared): its frames are the REPL's, not the program's, so they go. One whose stack
 * names the program file keeps it.
 */
function dropReplSyntaxFrames(error: unknown, filename: string): void {
  if (!types.isNativeError(error)) return;
  try {
    const stack = error.stack;
    if (error.name !== 'SyntaxError' || typeof stack !== 'string' || stack.includes(filename)) return;
    error.stack = stack.replace(/^REPL\d+:\d+\r?\n/, '').replace(/^\s+at\s.*\n?/gm, '');
  } catch {
    // A stack the program made unreadable or unwritable stays as it is.
  }
}

/**
 * The text handed to Node's eval. Interactive lines end in a newline, which also keeps a trailing
 * line comment from swallowing the top-level-await wrapper's closing brackets. A program that starts
 * with `{` is a block, as the reference specifies: Node would parenthesize it as an object literal,
 * unless the input ends with `;`, so an empty statement is appended (it changes no completion value,
 * line or column).
 */
export function replInput(program: string): string {
  return STARTS_WITH_BRACE.test(program) ? `${program}\n;\n` : `${program}\n`;
}

/**
 * The engine's SyntaxError for source Node's REPL did not compile, without evaluator frames.
 * Incomplete input arrives as a repl.Recoverable and errors found while lowering top-level await
 * carry a REPL-formatted message without a line; both are recompiled by V8 as an async function
 * body, where `await` is valid, to get its message and location.
 */
function compileError(error: Error, program: string, filename: string): unknown {
  if (error instanceof repl.Recoverable) {
    let inner: Error = error;
    while (inner instanceof repl.Recoverable) inner = inner.err;
    return engineSyntaxError(`${ASYNC_PREFIX}${program}`, filename) ?? withoutFrames(new SyntaxError(lastParagraph(inner.message)));
  }
  if (error.name !== 'SyntaxError') return error;
  if (String(error.stack).startsWith(`${filename}:`)) return withoutFrames(error);
  return engineSyntaxError(`${ASYNC_PREFIX}${program}\n})`, filename) ?? withoutFrames(new SyntaxError(lastParagraph(error.message)));
}

function engineSyntaxError(source: string, filename: string): Error | undefined {
  try {
    new vm.Script(source, { filename, lineOffset: -1 });
  } catch (error) {
    if (error instanceof SyntaxError) return withoutFrames(error);
  }
  return undefined;
}

function withoutFrames(error: Error): Error {
  error.stack = String(error.stack).replace(FRAME_LINE, '').trimEnd();
  return error;
}

/** The parser message of the REPL's "\n<line>\n<caret>\n\n<message>" form. */
function lastParagraph(message: string): string {
  return message.slice(message.lastIndexOf('\n\n') + 1).trim() || 'Invalid or incomplete program';
}
