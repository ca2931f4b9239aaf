// The reference's ProgramImportHandler, and the handler ptc builds from the host's import policy.
// The carrier is the runner: runner code reaches it as a module file named by the host's config
// (imports.handler), loaded in the carrier's own realm before any program runs, so its decisions
// can return runner-local objects (closures, private fields) that a serialized value could not carry.
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { decideByRules, type ImportPolicy } from '../../wire/import-policy.ts';

/** One import a program (or, in vm-script, a module it loaded) asks for. */
export interface ProgramImportRequest {
  specifier: string;
  /** Import attributes (`with { type: 'json' }`), as given. */
  attributes: Record<string, string>;
  /** Absolute file name of the importing Script or module. */
  referrer: string;
}

export type ProgramImportDecision =
  /** Resolve and load the requested module. */
  | { type: 'default' }
  /** Resolve and load this specifier instead, with the original attributes; it does not reenter the handler. */
  | { type: 'redirect'; specifier: string }
  /** The module whose exports are this object's own enumerable string properties. */
  | { type: 'module'; exports: object };

/** Decides each program import; vm-script and the scoped REPL accept a Promise of the decision, async-function and Node's REPL do not. */
export type ProgramImportHandler = (request: ProgramImportRequest) => ProgramImportDecision | PromiseLike<ProgramImportDecision>;

/** The error a denied import rejects with; the program's `exception` names the specifier and the rule. */
export function importDenied(specifier: string, rule: string): Error {
  const error = new Error(`import of ${JSON.stringify(specifier)} is denied by the import policy (${rule})`);
  Object.defineProperty(error, 'code', { value: 'PTC_IMPORT_DENIED', enumerable: true, configurable: true, writable: true });
  return error;
}

const runnerHandlers = new Map<string, ProgramImportHandler>();

/** Loads the runner's handler module once per carrier; its default export is the handler. */
export async function loadRunnerHandler(path: string): Promise<ProgramImportHandler> {
  const known = runnerHandlers.get(path);
  if (known !== undefined) return known;
  // Through Node's default loader: the embedded binary's own import() reaches only builtins.
  const load = new vm.Script('(url) => import(url)', { filename: path, importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER }).runInThisContext() as (url: string) => Promise<{ default?: unknown }>;
  const loaded = await load(pathToFileURL(path).href);
  if (typeof loaded.default !== 'function') {
    throw new TypeError(`the import handler module ${path} must export a function as default, got ${typeof loaded.default}`);
  }
  const handler = loaded.default as ProgramImportHandler;
  runnerHandlers.set(path, handler);
  return handler;
}

/**
 * The handler that enforces a policy: a deny rule throws before anything is resolved (no file is
 * read, nothing is fetched), a map rule redirects to its file or hands out the bindings, and what
 * the rules let through goes to the runner's handler, if any.
 */
export function policyHandler(policy: ImportPolicy, runner: ProgramImportHandler | undefined, bindings: (namespace: string) => object): ProgramImportHandler {
  return (request) => {
    const decision = decideByRules(policy.rules, request.specifier);
    if (decision.kind === 'deny') throw importDenied(request.specifier, decision.rule);
    if (decision.kind === 'map') {
      const { rule } = decision;
      if ('file' in rule) return { type: 'redirect', specifier: pathToFileURL(rule.file).href };
      return { type: 'module', exports: bindings(rule.bindings) };
    }
    return runner === undefined ? { type: 'default' } : runner(request);
  };
}

/** A decision as the handler gave it, checked: anything else rejects the import. */
export function checkDecision(decision: unknown): ProgramImportDecision {
  const value = decision as { type?: unknown; specifier?: unknown; exports?: unknown } | null;
  if (typeof value === 'object' && value !== null) {
    if (value.type === 'default') return { type: 'default' };
    if (value.type === 'redirect' && typeof value.specifier === 'string') return { type: 'redirect', specifier: value.specifier };
    if (value.type === 'module' && ((typeof value.exports === 'object' && value.exports !== null) || typeof value.exports === 'function')) {
      return { type: 'module', exports: value.exports as object };
    }
  }
  throw new TypeError(`an import handler must return { type: 'default' }, { type: 'redirect', specifier } or { type: 'module', exports }, got ${String(decision)}`);
}

/** Whether a value is a thenable (a handler's asynchronous decision). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return ((typeof value === 'object' && value !== null) || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}
