// Per-call programs are async function bodies: top-level await and return work. The body is
// wrapped in a strict async function and compiled as a vm.Script whose line offset cancels the
// wrapper's first line, so stack lines and columns are those of the program source.
import vm from 'node:vm';
import { rejected, then } from '../hardening/intrinsics.ts';
import { createScriptImports, type ScriptImports } from '../imports/vm-imports.ts';
import type { Completion, Evaluator, ImportSetup } from './types.ts';

// The box has no prototype: resolving the evaluation with it must not consult a
// Object.prototype.then that the program may have installed.
const { create } = Object;

const PREFIX = '(async function () {"use strict";\n';
const SUFFIX = '\n})';

/** Compiles a function body; throws the engine's SyntaxError for invalid source. */
export function compileAsyncFunction(program: string, filename: string, imports?: ScriptImports): () => Promise<unknown> {
  const script = new vm.Script(`${PREFIX}${program}${SUFFIX}`, {
    filename,
    lineOffset: -1,
    importModuleDynamically: imports === undefined ? vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER : imports.callback(filename, filename),
  });
  return script.runInThisContext() as () => Promise<unknown>;
}

/** The async-function evaluator: the carrier's own realm, nothing retained between programs. */
export function createAsyncFunctionEvaluator(setup?: ImportSetup): Evaluator {
  // The reference's AsyncFunction takes only synchronous decisions.
  const imports = setup === undefined ? undefined : createScriptImports(setup, undefined, true, 'async-function');
  return {
    format: 'async-function',
    globalObject: globalThis as unknown as Record<string, unknown>,
    evaluate(program, { filename }) {
      // Not `await`: awaiting the program's promise would look up its constructor (and then its
      // `then`), which the program has had every chance to replace by the time it returns.
      let body: Promise<unknown>;
      try {
        body = compileAsyncFunction(program, filename, imports)();
      } catch (error) {
        return rejected(error);
      }
      return then(body, (value) => {
        const completion: Completion = create(null);
        completion.value = value;
        return completion;
      });
    },
    dispose() {
      imports?.dispose();
    },
  };
}
