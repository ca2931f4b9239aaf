// The one vm context a scoped REPL environment keeps. Like Node's REPL with `useGlobal: false`, it
// receives the carrier realm's Node globals (process, Buffer, timers, URL, fetch, ...) by copying
// their property descriptors (on first use: lazy-global.ts), and a `global` alias of its own global object. Unlike the REPL it
// adds no `require`, `module` or built-in module globals such as `fs`: programs use `import()`.
import vm from 'node:vm';
import { defineLazyGlobal } from '../lazy-global.ts';

/** Names a CommonJS entry point or Node's REPL would add; programs never see them. */
const MODULE_GLOBALS = new Set(['require', 'module', 'exports', '__filename', '__dirname']);

export interface ProgramContext {
  readonly context: vm.Context;
  /** The context's global object, as programs see it. */
  readonly globalObject: Record<string, unknown>;
}

/** Creates the context; without `codeGeneration`, its eval, Function and WebAssembly compilation throw. */
export function createProgramContext(codeGeneration: boolean): ProgramContext {
  const sandbox: Record<string, unknown> = {};
  const context = vm.createContext(sandbox, {
    name: 'ptc scoped REPL',
    ...(codeGeneration ? {} : { codeGeneration: { strings: false, wasm: false } }),
  });
  const own = new Set(vm.runInContext('Object.getOwnPropertyNames(globalThis)', context) as string[]);
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (own.has(name) || MODULE_GLOBALS.has(name)) continue;
    defineLazyGlobal(sandbox, name);
  }
  const globalObject = vm.runInContext('globalThis', context) as Record<string, unknown>;
  Object.defineProperty(sandbox, 'global', { value: globalObject, writable: true, configurable: true, enumerable: false });
  // Every context has V8's console, which only reaches an attached inspector; programs print
  // through the carrier's, whose writes the carrier captures.
  Object.defineProperty(sandbox, 'console', { value: globalThis.console, writable: true, configurable: true, enumerable: false });
  return { context, globalObject };
}
