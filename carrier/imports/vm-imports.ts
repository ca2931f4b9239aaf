// Program imports of the formats compiled as vm.Script (async-function, vm-script, the scoped
// REPL) when a handler is given: the Script's importModuleDynamically callback asks the handler,
// then loads. In a vm context (vm-script, the scoped REPL) a file that is ESM (`.mjs`, or `.js` in
// a package of type module) is loaded as a SourceTextModule in that context, so it sees the
// Script's globals, and its static and dynamic imports ask the same handler; every other module
// loads through Node's default loader from the importing file. These callbacks need
// --experimental-vm-modules, which every launch of ptc's carrier passes.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { types } from 'node:util';
import vm from 'node:vm';
import { checkDecision, isThenable, type ProgramImportDecision } from './handler.ts';
import { failedByEnd, guardImport, importAfterEnd, NEVER } from './late.ts';
import { rejected } from '../hardening/intrinsics.ts';
import type { ImportSetup } from './setup.ts';

type DefaultImport = (specifier: string, attributes: Record<string, string>) => Promise<object>;
/** A Script's importModuleDynamically callback; `phase` is 'source' for `import.source()` (Node 24 and later). */
type ImportCallback = (specifier: string, script: unknown, attributes: object, phase?: string) => Promise<any>;

interface VmModules {
  SourceTextModule: typeof vm.SourceTextModule;
  SyntheticModule: typeof vm.SyntheticModule;
}

/** Whether this process can intercept vm.Script imports (it was started with --experimental-vm-modules). */
export function canInterceptScriptImports(): boolean {
  return typeof (vm as { SyntheticModule?: unknown }).SyntheticModule === 'function';
}

/** One evaluator's import state: its modules (by file URL, by exports object) and its default loaders per referrer. */
export interface ScriptImports {
  /** The importModuleDynamically callback of a Script whose imports resolve from `referrer` (a path or file URL); `filename` is what the handler is told. */
  callback(referrer: string, filename: string): ImportCallback;
  dispose(): void;
}

/**
 * Import state for one evaluator whose programs run in `context` (undefined: the carrier's own realm,
 * where modules load natively). `synchronous` formats (async-function) reject a handler that returns a Promise.
 */
export function createScriptImports(setup: ImportSetup, context: vm.Context | undefined, synchronous: boolean, format: string): ScriptImports {
  const { SourceTextModule, SyntheticModule } = vm as unknown as VmModules;
  const loaders = new Map<string, DefaultImport>();
  const sourceLoaders = new Map<string, (specifier: string) => Promise<unknown>>();
  let made = new WeakMap<object, vm.SyntheticModule>();
  /** File modules by resolved URL; a module whose source could not be read or compiled stays that error. */
  let files = new Map<string, { module: vm.SourceTextModule } | { failure: unknown }>();
  let readying = new WeakMap<vm.Module, Promise<vm.Module>>();
  let disposed = false;

  // A Script named after the referrer and compiled with Node's default loader imports exactly as
  // the program's own `import()` would without a handler.
  const defaultImport = (referrer: string): DefaultImport => {
    let load = loaders.get(referrer);
    if (load === undefined) {
      load = new vm.Script('(specifier, attributes) => import(specifier, { with: attributes })', {
        filename: referrer,
        importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
      }).runInThisContext() as DefaultImport;
      loaders.set(referrer, load);
    }
    return load;
  };

  const decide = async (specifier: string, attributes: Record<string, string>, filename: string): Promise<ProgramImportDecision> => {
    if (disposed) throw new Error(`import of ${JSON.stringify(specifier)} after its ${format} environment was released`);
    // A static import linked after its evaluation ended (the dynamic ones are guarded where they start).
    if (setup.evaluation() === undefined) {
      if (!setup.retained) return NEVER;
      throw importAfterEnd(specifier);
    }
    const decided = setup.handler()({ specifier, attributes, referrer: filename });
    if (isThenable(decided) && synchronous) {
      throw new TypeError(`the import handler returned a Promise for ${JSON.stringify(specifier)}; ${format} programs need a synchronous decision`);
    }
    return checkDecision(await decided);
  };

  // One exports object (or one native namespace) is one module of this evaluator; its names and
  // values are captured when it evaluates.
  const synthetic = (exports: object): vm.SyntheticModule => {
    let module = made.get(exports);
    if (module === undefined) {
      const names = Object.keys(exports);
      module = new SyntheticModule(names, function (this: vm.SyntheticModule) {
        for (const name of names) this.setExport(name, (exports as Record<string, unknown>)[name]);
      }, context === undefined ? {} : { context });
      made.set(exports, module);
    }
    return module;
  };

  const fileModule = (url: string): vm.SourceTextModule => {
    const known = files.get(url);
    if (known !== undefined) {
      if ('failure' in known) throw known.failure;
      return known.module;
    }
    const path = fileURLToPath(url);
    try {
      const module: vm.SourceTextModule = new SourceTextModule(readFileSync(path, 'utf8'), {
        identifier: url,
        context,
        initializeImportMeta(meta: Record<string, unknown>) {
          meta.url = url;
          meta.filename = path;
          meta.dirname = dirname(path);
          meta.main = false;
          meta.resolve = (specifier: string) => new URL(specifier, url).href;
        },
        importModuleDynamically: (specifier: string, _module: unknown, attributes: object, phase?: string) => guarded(specifier, attributes, phase, path, url, path),
      } as unknown as vm.SourceTextModuleOptions);
      // Refused before the handler is asked about any of the module's imports.
      const sourcePhase = (module as unknown as { moduleRequests?: readonly { specifier: string; phase?: string }[] }).moduleRequests?.find((request) => request.phase === 'source');
      if (sourcePhase !== undefined) throw sourcePhaseRefused(sourcePhase.specifier, `${url}, an ES module loaded into the ${format} context`);
      files.set(url, { module });
      return module;
    } catch (error) {
      files.set(url, { failure: error });
      throw error;
    }
  };

  /** The module a request names, not yet linked: one made from exports, a file module, or a native one's synthetic copy. */
  const moduleFor = async (specifier: string, attributes: Record<string, string>, referrer: string, referrerUrl: string, filename: string): Promise<vm.Module> => {
    const decision = await decide(specifier, attributes, filename);
    if (decision.type === 'module') return synthetic(decision.exports);
    const target = decision.type === 'redirect' ? decision.specifier : specifier;
    const url = context === undefined ? undefined : esmFile(target, referrerUrl);
    if (url !== undefined) {
      if (Object.keys(attributes).length > 0) throw new TypeError(`import attributes are not supported on ${url}, an ES module loaded into the ${format} context`);
      return fileModule(url);
    }
    return synthetic(await defaultImport(referrer)(target, attributes));
  };

  const linker = (specifier: string, referencing: vm.Module, extra: { attributes?: object; assert?: object }): Promise<vm.Module> => {
    const url = referencing.identifier;
    const path = url.startsWith('file:') ? fileURLToPath(url) : url;
    return moduleFor(specifier, { ...(extra?.attributes ?? extra?.assert) } as Record<string, string>, path, url, path);
  };

  // Linked and evaluated once; concurrent imports of a module share the work.
  const ready = (module: vm.Module): Promise<vm.Module> => {
    let pending = readying.get(module);
    if (pending === undefined) {
      pending = (async () => {
        // A module another graph linked and evaluated is done; evaluating it again as a root fails.
        if (module.status === 'errored') throw module.error;
        if (module.status === 'evaluated') return module;
        try {
          if (module.status === 'unlinked') await module.link(linker);
          await module.evaluate();
        } catch (error) {
          if (failedByEnd(error)) forgetUnfinished();
          throw error;
        }
        return module;
      })();
      readying.set(module, pending);
    }
    return pending;
  };

  // A graph that failed because its evaluation ended is loaded again by a later evaluation: its
  // modules that did not finish evaluating are dropped (new instances next time); the evaluated
  // ones, and those that failed on their own, stay what they are.
  const forgetUnfinished = (): void => {
    for (const [url, entry] of files) {
      if (!('module' in entry)) continue;
      const { module } = entry;
      const finished = module.status === 'evaluated' || module.status === 'evaluating' || (module.status === 'errored' && !failedByEnd(module.error));
      if (finished) continue;
      files.delete(url);
      readying.delete(module);
    }
  };

  /**
   * A dynamic import, late when its evaluation has ended or ends first. A source-phase one is
   * refused in a vm context, as the reference's VM Script does before asking the handler; in the
   * carrier's realm (async-function) it follows Node's rules, as the reference's AsyncFunction does.
   */
  function guarded(specifier: string, attributes: object, phase: string | undefined, referrer: string, referrerUrl: string, filename: string): Promise<unknown> {
    if (phase === 'source') {
      if (context !== undefined) return rejected(sourcePhaseRefused(specifier, `${format} programs`));
      return guardImport(setup, specifier, () => sourceImport(specifier, referrer, filename));
    }
    return guardImport(setup, specifier, () => dynamicImport(specifier, attributes, referrer, referrerUrl, filename));
  }

  // What it resolves with is a vm.Module or a namespace, for Node to take the namespace from: a
  // namespace is a thenable when the module exports a callable `then`, and resolving a promise with
  // it here would assimilate it before Node's check that the result is a module.
  async function dynamicImport(specifier: string, attributes: object, referrer: string, referrerUrl: string, filename: string): Promise<unknown> {
    const given = { ...attributes } as Record<string, string>;
    const decision = await decide(specifier, given, filename);
    if (decision.type === 'module') return ready(synthetic(decision.exports));
    const target = decision.type === 'redirect' ? decision.specifier : specifier;
    const url = context === undefined ? undefined : esmFile(target, referrerUrl);
    if (url === undefined) return loaded(await defaultImport(referrer)(target, given));
    if (Object.keys(given).length > 0) throw new TypeError(`import attributes are not supported on ${url}, an ES module loaded into the ${format} context`);
    try {
      return await ready(fileModule(url));
    } catch (error) {
      // Another evaluation's graph of this module failed when that evaluation ended: this one loads it anew.
      if (failedByEnd(error) && setup.evaluation() !== undefined) return ready(fileModule(url));
      throw error;
    }
  }

  /**
   * What Node's loader gave: its namespace, or, for a module with a callable `then` export, the
   * value that `then` produced (the loader's import() assimilated it). That value goes on to the
   * program as a module whose `then` hands it over, so the program's import() settles with it.
   */
  function loaded(value: object): object | Promise<vm.Module> {
    if (types.isModuleNamespaceObject(value)) return value;
    return ready(synthetic({ then: (resolve: (value: unknown) => void) => resolve(value) }));
  }

  /**
   * A source-phase import in the carrier's realm. The handler decides as for any import; then Node
   * loads the source phase of what it chose and fails as Node does (a JavaScript module has no
   * source object, nor has a module made from exports). A source object Node does make, a
   * WebAssembly.Module, cannot pass back: node:vm's callback accepts only modules and namespaces.
   */
  async function sourceImport(specifier: string, referrer: string, filename: string): Promise<unknown> {
    const decision = await decide(specifier, {}, filename);
    if (decision.type === 'module') return ready(synthetic(decision.exports));
    const target = decision.type === 'redirect' ? decision.specifier : specifier;
    const source = await defaultSourceImport(referrer)(target);
    const what = typeof source === 'object' && source !== null ? (source.constructor?.name ?? 'object') : typeof source;
    throw new TypeError(
      `source-phase import of ${JSON.stringify(target)}: its source object (a ${what}) cannot be handed to an async-function program that runs under an import policy, ` +
        "whose imports go through node:vm's import callback; compile it from its bytes instead (WebAssembly.compile(await fs.readFile(path)))",
    );
  }

  // As defaultImport, for `import.source(specifier)`, which takes no attributes.
  const defaultSourceImport = (referrer: string): ((specifier: string) => Promise<unknown>) => {
    let load = sourceLoaders.get(referrer);
    if (load === undefined) {
      load = new vm.Script('(specifier) => import.source(specifier)', {
        filename: referrer,
        importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
      }).runInThisContext() as (specifier: string) => Promise<unknown>;
      sourceLoaders.set(referrer, load);
    }
    return load;
  };

  return {
    callback(referrer, filename) {
      const referrerUrl = referrer.startsWith('file:') ? referrer : pathToFileURL(referrer).href;
      return (specifier, _script, attributes, phase) => guarded(specifier, attributes, phase, referrer, referrerUrl, filename);
    },
    dispose() {
      disposed = true;
      loaders.clear();
      sourceLoaders.clear();
      made = new WeakMap();
      files = new Map();
      readying = new WeakMap();
    },
  };
}

/** The rejection of a source-phase import (`import.source(x)`, `import source x from`), which the handler is never asked about. */
function sourcePhaseRefused(specifier: string, where: string): TypeError {
  return new TypeError(`source-phase imports are not supported in ${where}: import source ${JSON.stringify(specifier)}`);
}

/**
 * The file URL of an ES module file that a relative, absolute or file: specifier names; undefined
 * for anything else (packages, builtins, CommonJS, JSON), which Node's loader loads.
 */
function esmFile(specifier: string, referrerUrl: string): string | undefined {
  if (!/^(?:\.{1,2}\/|\/|file:)/.test(specifier)) return undefined;
  let url: URL;
  try {
    url = new URL(specifier, referrerUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'file:') return undefined;
  url.search = '';
  url.hash = '';
  const path = fileURLToPath(url);
  if (path.endsWith('.mjs')) return url.href;
  if (path.endsWith('.js') && packageType(dirname(path)) === 'module') return url.href;
  return undefined;
}

/** The `type` of the nearest package.json above a directory, as Node reads it for `.js` files. */
function packageType(directory: string): string | undefined {
  for (let current = directory; ; current = dirname(current)) {
    let text: string | undefined;
    try {
      text = readFileSync(join(current, 'package.json'), 'utf8');
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      try {
        const type = (JSON.parse(text) as { type?: unknown }).type;
        return typeof type === 'string' ? type : undefined;
      } catch {
        return undefined;
      }
    }
    if (dirname(current) === current) return undefined;
  }
}
