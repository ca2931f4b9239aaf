// The four evaluators behind one factory; the run request names the format. Each loads on first
// use, so a per-call carrier never pays for the REPL machinery or the await lowering.
import type { ProgramFormat } from '../../wire/messages.ts';
import { createAsyncFunctionEvaluator } from './async-function.ts';
import type { Evaluator, ImportSetup } from './types.ts';

/** A new evaluator for a program format. */
export async function createEvaluator(format: ProgramFormat, imports?: ImportSetup): Promise<Evaluator> {
  switch (format) {
    case 'async-function':
      return createAsyncFunctionEvaluator(imports);
    case 'vm-script':
      return (await import('./vm-script.ts')).createVmScriptEvaluator(imports);
    case 'scoped-repl':
      return (await import('./scoped-repl.ts')).createScopedReplEvaluator({}, imports);
    case 'repl':
      return (await import('./repl.ts')).createNodeReplEvaluator(imports);
  }
}
