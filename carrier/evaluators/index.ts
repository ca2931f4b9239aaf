// The four evaluators behind one factory; the run request names the format. Each loads on first
// use, so a per-call carrier never pays for the REPL machinery or the await lowering.
import type { ProgramFormat } from '../protocol/messages.ts';
import { createAsyncFunctionEvaluator } from './async-function.ts';
import type { Evaluator } from './types.ts';

/** A new evaluator for a program format. */
export async function createEvaluator(format: ProgramFormat): Promise<Evaluator> {
  switch (format) {
    case 'async-function':
      return createAsyncFunctionEvaluator();
    case 'vm-script':
      return (await import('./vm-script.ts')).createVmScriptEvaluator();
    case 'scoped-repl':
      return (await import('./scoped-repl.ts')).createScopedReplEvaluator();
    case 'repl':
      return (await import('./repl.ts')).createNodeReplEvaluator();
  }
}
