// The carrier's side of a run's import policy: the handler in force for the environment's
// evaluator, rebuilt at each run (a run's bindings are its own), and the checks that make an
// unenforceable policy fail the run instead of being ignored.
import type { ImportPolicy } from '../../wire/import-policy.ts';
import type { ImportSetup } from './setup.ts';
import { loadRunnerHandler, policyHandler, type ProgramImportHandler } from './handler.ts';
import { canInterceptScriptImports } from './vm-imports.ts';

let current: ProgramImportHandler | undefined;

/** How the carrier tells which evaluation an import belongs to, for the late-import rule. */
export interface Evaluations {
  /** The evaluation the calling code belongs to, while it is the active one. */
  current(): object | undefined;
  /** Whether an evaluation is active at all. */
  busy(): boolean;
}

/** The import setup a new evaluator for this run needs; undefined when the run has no policy. */
export function importSetup(format: string, policy: ImportPolicy | undefined, retained: boolean, evaluations: Evaluations): ImportSetup | undefined {
  if (policy === undefined) return undefined;
  if (format !== 'repl' && !canInterceptScriptImports()) {
    throw new Error(`an import policy or handler needs the carrier started with --experimental-vm-modules for ${format} programs (ptc's launches pass it; an independently started carrier must)`);
  }
  return {
    handler: () => {
      if (current === undefined) throw new Error('no import handler is in force');
      return current;
    },
    evaluation: () => evaluations.current(),
    busy: () => evaluations.busy(),
    retained,
  };
}

/** Puts this run's policy in force for its evaluator, whose global object holds the run's bindings. */
export async function applyImports(policy: ImportPolicy | undefined, bindings: readonly string[], globalObject: Record<string, unknown>, hasSetup: boolean): Promise<void> {
  if (policy === undefined) {
    current = undefined;
    return;
  }
  if (!hasSetup) throw new Error('this retained environment was created without an import policy; release it to run with one');
  const runner = policy.handler === undefined ? undefined : await loadRunnerHandler(policy.handler);
  const modules = new Map<string, object>();
  current = policyHandler(policy, runner, (namespace) => {
    let exports = modules.get(namespace);
    if (exports === undefined) {
      exports = bindingExports(bindings, globalObject, namespace);
      modules.set(namespace, exports);
    }
    return exports;
  });
}

/** The run's bindings as a module: every top-level binding and namespace, or one namespace's members. */
function bindingExports(bindings: readonly string[], globalObject: Record<string, unknown>, namespace: string): object {
  const exports: Record<string, unknown> = Object.create(null);
  if (namespace === '') {
    for (const name of bindings) {
      const top = name.split('.')[0]!;
      exports[top] = globalObject[top];
    }
    return exports;
  }
  const holder = globalObject[namespace];
  if (typeof holder === 'object' && holder !== null) {
    for (const key of Object.keys(holder)) exports[key] = (holder as Record<string, unknown>)[key];
  }
  return exports;
}
