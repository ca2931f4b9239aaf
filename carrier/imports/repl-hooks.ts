// Program imports of Node's REPL evaluator when a handler is given. The REPL compiles its input
// itself, so its `import()` is met in module.registerHooks' synchronous resolve hook (Node 22.15
// and later), where the REPL's imports are those whose parent is `<cwd>/repl`, the referrer Node's
// REPL gives them. A module decision resolves to a `ptc-import:` URL whose source re-exports the
// exports object from a symbol-keyed bridge on the carrier's global. Node's REPL also hands
// programs `require` and a global per builtin module (`fs`, `child_process`); with a handler, both
// ask it first, as `import()` does.
import module, { builtinModules } from 'node:module';
import { checkDecision, isThenable, type ProgramImportHandler } from './handler.ts';

const BRIDGE = Symbol.for('ptc.import.exports');
const REPL_PARENT = /^file:\/\/.*\/repl$/;
const SCHEME = 'ptc-import:';

interface RegisteredHooks {
  deregister(): void;
}

type RegisterHooks = (hooks: {
  resolve?: (specifier: string, context: { parentURL?: string; importAttributes?: Record<string, string> }, next: (specifier: string, context?: object) => { url: string }) => { url: string; shortCircuit?: boolean; format?: string };
  load?: (url: string, context: object, next: (url: string, context?: object) => { source?: unknown; format?: string }) => { source?: unknown; format?: string; shortCircuit?: boolean };
}) => RegisteredHooks;

/** Whether this Node can intercept the REPL's imports. */
export function canInterceptReplImports(): boolean {
  return typeof (module as { registerHooks?: unknown }).registerHooks === 'function';
}

/** Installs the hooks for one REPL evaluator, whose context is `context`; the returned function removes them and releases its modules. */
export function installReplImports(handler: () => ProgramImportHandler, filename: () => string, context: Record<string, unknown>): () => void {
  guardRequire(handler, filename, context);
  const register = (module as unknown as { registerHooks: RegisterHooks }).registerHooks;
  const exported = new Map<string, object>();
  const ids = new WeakMap<object, string>();
  (globalThis as Record<symbol, unknown>)[BRIDGE] = (id: string) => exported.get(id);
  const hooks = register({
    resolve(specifier, context, next) {
      // Node's REPL names `<cwd>/repl` as the parent when import() runs; the cwd may have moved by
      // the time this hook does, so any such parent is the REPL's (the carrier has no file named repl).
      if (context.parentURL === undefined || !REPL_PARENT.test(context.parentURL)) return next(specifier, context);
      const attributes = { ...context.importAttributes };
      const decided = handler()({ specifier, attributes, referrer: filename() });
      if (isThenable(decided)) throw new TypeError(`the import handler returned a Promise for ${JSON.stringify(specifier)}; repl programs need a synchronous decision`);
      const decision = checkDecision(decided);
      if (decision.type === 'default') return next(specifier, context);
      if (decision.type === 'redirect') return next(decision.specifier, context);
      let id = ids.get(decision.exports);
      if (id === undefined) {
        id = String(exported.size);
        ids.set(decision.exports, id);
        exported.set(id, decision.exports);
      }
      return { url: `${SCHEME}${id}`, shortCircuit: true, format: 'module' };
    },
    load(url, context, next) {
      if (!url.startsWith(SCHEME)) return next(url, context);
      const id = url.slice(SCHEME.length);
      const exports = exported.get(id);
      if (exports === undefined) throw new Error(`no module ${url}`);
      return { source: bridgeSource(id, Object.keys(exports)), format: 'module', shortCircuit: true };
    },
  });
  return () => {
    hooks.deregister();
    exported.clear();
    delete (globalThis as Record<symbol, unknown>)[BRIDGE];
  };
}

// Names and values are captured once, when the module evaluates; string export names allow any key.
function bridgeSource(id: string, names: string[]): string {
  const lines = [`const exports = globalThis[Symbol.for(${JSON.stringify(BRIDGE.description)})](${JSON.stringify(id)});`];
  names.forEach((name, index) => {
    lines.push(`const e${index} = exports[${JSON.stringify(name)}];`, `export { e${index} as ${JSON.stringify(name)} };`);
  });
  return lines.join('\n');
}

/**
 * The REPL context's `require` and builtin-module globals, asking the handler first: a denial
 * throws, a module decision hands out its exports, a redirect requires the replacement.
 */
function guardRequire(handler: () => ProgramImportHandler, filename: () => string, context: Record<string, unknown>): void {
  const original = context.require as ((id: string) => unknown) | undefined;
  if (typeof original !== 'function') return;
  const load = (specifier: string, fallback: () => unknown): unknown => {
    const decided = handler()({ specifier, attributes: {}, referrer: filename() });
    if (isThenable(decided)) throw new TypeError(`the import handler returned a Promise for ${JSON.stringify(specifier)}; repl programs need a synchronous decision`);
    const decision = checkDecision(decided);
    if (decision.type === 'module') return decision.exports;
    if (decision.type === 'redirect') return original(decision.specifier);
    return fallback();
  };
  const guarded = function require(id: string): unknown {
    return load(String(id), () => original(id));
  };
  for (const key of Object.keys(original)) (guarded as unknown as Record<string, unknown>)[key] = (original as unknown as Record<string, unknown>)[key];
  Object.defineProperty(context, 'require', { value: guarded, writable: true, configurable: true, enumerable: false });
  for (const name of builtinModules) {
    const descriptor = Object.getOwnPropertyDescriptor(context, name);
    if (descriptor === undefined || descriptor.get === undefined) continue;
    const get = descriptor.get;
    Object.defineProperty(context, name, {
      configurable: true,
      enumerable: descriptor.enumerable ?? false,
      get: () => load(`node:${name}`, () => Reflect.apply(get, context, [])),
      set: descriptor.set,
    });
  }
}
