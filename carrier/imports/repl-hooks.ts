// Program imports of Node's REPL evaluator when a handler is given. The REPL compiles its input
// itself, so its `import()` is met in Node's module resolution, where the REPL's imports are those
// whose parent is `<cwd>/repl`, the referrer Node's REPL gives them. On Node 22.15 and later that is
// module.registerHooks' synchronous resolve hook, on this thread, inside the importing code's async
// context (so an import is attributed to its own evaluation). Node 20 has only module.register,
// whose hooks run on a loader thread: there the hook asks this thread over a MessagePort and waits,
// and the decision is taken outside the importing code's context, so an import counts as late when
// no evaluation is active. A module decision (and, from the loader thread, a thrown value or a late
// import) resolves to a `ptc-import:` URL whose source reads its exports (or its throw) from a
// symbol-keyed bridge on the carrier's global. Node's REPL also hands programs `require` and a
// global per builtin module (`fs`, `child_process`); with a handler, both ask it first, as
// `import()` does.
import module, { builtinModules } from 'node:module';
import { checkDecision, isThenable, type ProgramImportHandler } from './handler.ts';
import { importAfterEnd } from './late.ts';
import type { ImportSetup } from './setup.ts';

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

type Register = (specifier: string, options: { data: unknown; transferList: unknown[] }) => void;

/** Where a REPL import goes: on to Node's resolution with this specifier, or to a module of ours. */
type Resolution = { next: string } | { url: string; source: string };

const hooks = module as unknown as { registerHooks?: RegisterHooks; register?: Register };

/** Whether this Node can intercept the REPL's imports. */
export function canInterceptReplImports(): boolean {
  return typeof hooks.registerHooks === 'function' || typeof hooks.register === 'function';
}

/** Installs the hooks for one REPL evaluator, whose context is `context`; the returned function removes them and releases its modules. */
export function installReplImports(setup: ImportSetup, filename: () => string, context: Record<string, unknown>): () => void {
  // First, so that a loader thread that cannot start leaves nothing installed.
  if (typeof hooks.registerHooks !== 'function') loaderThread();
  guardRequire(setup.handler, filename, context);
  const exported = new Map<string, object>();
  const thrown = new Map<string, unknown>();
  const ids = new WeakMap<object, string>();
  let made = 0;
  (globalThis as Record<symbol, unknown>)[BRIDGE] = {
    exports: (id: string) => exported.get(id),
    thrown(id: string): unknown {
      const value = thrown.get(id);
      thrown.delete(id);
      return value;
    },
  };
  // A temporary evaluation's late import never settles: its module waits forever at the top level.
  const late = (specifier: string): Resolution => {
    if (setup.retained) throw importAfterEnd(specifier);
    return { url: `${SCHEME}pending/${made++}`, source: 'await new Promise(() => {});' };
  };
  const resolution = (specifier: string, attributes: Record<string, string>, live: boolean): Resolution => {
    if (!live) return late(specifier);
    const decided = setup.handler()({ specifier, attributes, referrer: filename() });
    if (isThenable(decided)) throw new TypeError(`the import handler returned a Promise for ${JSON.stringify(specifier)}; repl programs need a synchronous decision`);
    const decision = checkDecision(decided);
    if (decision.type === 'default') return { next: specifier };
    if (decision.type === 'redirect') return { next: decision.specifier };
    let id = ids.get(decision.exports);
    if (id === undefined) {
      id = String(exported.size);
      ids.set(decision.exports, id);
      exported.set(id, decision.exports);
    }
    return { url: `${SCHEME}${id}`, source: bridgeSource(id, Object.keys(decision.exports)) };
  };
  const release = (): void => {
    exported.clear();
    thrown.clear();
    delete (globalThis as Record<symbol, unknown>)[BRIDGE];
  };

  if (typeof hooks.registerHooks === 'function') {
    const sources = new Map<string, string>();
    const registered = hooks.registerHooks({
      resolve(specifier, context, next) {
        // Node's REPL names `<cwd>/repl` as the parent when import() runs; the cwd may have moved by
        // the time this hook does, so any such parent is the REPL's (the carrier has no file named repl).
        if (context.parentURL === undefined || !REPL_PARENT.test(context.parentURL)) return next(specifier, context);
        const resolved = resolution(specifier, { ...context.importAttributes }, setup.evaluation() !== undefined);
        if ('next' in resolved) return next(resolved.next, context);
        sources.set(resolved.url, resolved.source);
        return { url: resolved.url, shortCircuit: true, format: 'module' };
      },
      load(url, context, next) {
        if (!url.startsWith(SCHEME)) return next(url, context);
        const source = sources.get(url);
        if (source === undefined) throw new Error(`no module ${url}`);
        return { source, format: 'module', shortCircuit: true };
      },
    });
    return () => {
      registered.deregister();
      sources.clear();
      release();
    };
  }

  // Node 20: a thrown value cannot cross to the loader thread intact, so it is thrown by a module.
  answer = (specifier, attributes) => {
    try {
      return resolution(specifier, attributes, setup.busy());
    } catch (error) {
      const id = String(made++);
      thrown.set(id, error);
      return { url: `${SCHEME}throw/${id}`, source: `throw globalThis[Symbol.for(${JSON.stringify(BRIDGE.description)})].thrown(${JSON.stringify(id)});` };
    }
  };
  return () => {
    // module.register cannot be undone: the hook stays and lets everything through.
    answer = undefined;
    release();
  };
}

/** The decisions the loader thread asks for, while a REPL evaluator with a handler exists. */
let answer: ((specifier: string, attributes: Record<string, string>) => Resolution) | undefined;
let port: MessagePort | undefined;
// The global, captured before programs run: node:worker_threads would weigh on every REPL carrier.
const { MessageChannel } = globalThis;

// The hooks module module.register runs on Node's loader thread. It asks about the REPL's imports
// only, and waits for the answer; the carrier's own imports pass straight through.
const LOADER = `
const REPL_PARENT = ${REPL_PARENT.toString()};
const sources = new Map();
const waiting = new Map();
let port;
let asked = 0;
export function initialize(data) {
  port = data.port;
  port.on('message', ({ id, resolution }) => {
    const settle = waiting.get(id);
    waiting.delete(id);
    settle?.(resolution);
  });
}
export async function resolve(specifier, context, next) {
  if (context.parentURL === undefined || !REPL_PARENT.test(context.parentURL)) return next(specifier, context);
  const id = asked++;
  const resolution = await new Promise((settle) => {
    waiting.set(id, settle);
    port.postMessage({ id, specifier, attributes: { ...context.importAttributes } });
  });
  if (resolution.next !== undefined) return next(resolution.next, context);
  sources.set(resolution.url, resolution.source);
  return { url: resolution.url, format: 'module', shortCircuit: true };
}
export async function load(url, context, next) {
  const source = sources.get(url);
  if (source === undefined) return next(url, context);
  return { source, format: 'module', shortCircuit: true };
}
`;

/** Registers the loader thread's hooks once per carrier, with the port it asks this thread over. */
function loaderThread(): void {
  if (port !== undefined) return;
  const channel = new MessageChannel();
  const own = channel.port1;
  own.on('message', ({ id, specifier, attributes }: { id: number; specifier: string; attributes: Record<string, string> }) => {
    const resolution: Resolution = answer === undefined ? { next: specifier } : answer(specifier, attributes);
    own.postMessage({ id, resolution });
  });
  // The control channel keeps the carrier alive; the port must not.
  own.unref();
  try {
    hooks.register!(`data:text/javascript,${encodeURIComponent(LOADER)}`, { data: { port: channel.port2 }, transferList: [channel.port2] });
  } catch (error) {
    own.close();
    // Node's permission model (the node-permission sandbox) forbids the loader's thread.
    throw new Error(`an import policy or handler for repl programs on Node ${process.version} needs module.register's loader thread, which could not start: ${(error as Error)?.message}; use the scoped REPL (replScoped: true), another format, Node 22.15 or later, or the bwrap sandbox`, { cause: error });
  }
  port = own;
}

// Names and values are captured once, when the module evaluates; string export names allow any key.
function bridgeSource(id: string, names: string[]): string {
  const lines = [`const exports = globalThis[Symbol.for(${JSON.stringify(BRIDGE.description)})].exports(${JSON.stringify(id)});`];
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
