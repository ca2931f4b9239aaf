// Program imports of the formats compiled as vm.Script (async-function, vm-script, the scoped
// REPL) when a handler is given: the Script's importModuleDynamically callback asks the handler,
// then loads through Node's default loader from the importing file, or hands out a module made
// from the decision's exports object. This callback needs --experimental-vm-modules, which every
// launch of ptc's carrier passes.
import vm from 'node:vm';
import { checkDecision, isThenable, type ProgramImportDecision, type ProgramImportHandler } from './handler.ts';

type DefaultImport = (specifier: string, attributes: Record<string, string>) => Promise<unknown>;

/** Whether this process can intercept vm.Script imports (it was started with --experimental-vm-modules). */
export function canInterceptScriptImports(): boolean {
  return typeof (vm as { SyntheticModule?: unknown }).SyntheticModule === 'function';
}

/** One evaluator's import state: its modules made from exports objects, and its default loaders per referrer. */
export interface ScriptImports {
  /** The importModuleDynamically callback of a Script whose imports resolve from `referrer`. */
  callback(referrer: string, filename: string): ImportCallback;
  dispose(): void;
}

type ImportCallback = (specifier: string, script: unknown, attributes: object) => Promise<any>;

/**
 * Import state for one evaluator whose programs run in `context` (undefined: the carrier's own realm).
 * `synchronous` formats (async-function) reject a handler that returns a Promise.
 */
export function createScriptImports(handler: () => ProgramImportHandler, context: vm.Context | undefined, synchronous: boolean, format: string): ScriptImports {
  const loaders = new Map<string, DefaultImport>();
  let modules = new WeakMap<object, Promise<vm.Module>>();
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

  const moduleOf = (exports: object): Promise<vm.Module> => {
    let made = modules.get(exports);
    if (made === undefined) {
      const names = Object.keys(exports);
      const { SyntheticModule } = vm as unknown as { SyntheticModule: typeof vm.SyntheticModule };
      const module = new SyntheticModule(names, function (this: vm.SyntheticModule) {
        for (const name of names) this.setExport(name, (exports as Record<string, unknown>)[name]);
      }, context === undefined ? {} : { context });
      made = (async () => {
        await module.link(() => {
          throw new Error('a module made from exports has no imports');
        });
        await module.evaluate();
        return module;
      })();
      modules.set(exports, made);
    }
    return made;
  };

  const load = (decision: ProgramImportDecision, specifier: string, referrer: string, attributes: Record<string, string>): Promise<unknown> => {
    if (decision.type === 'module') return moduleOf(decision.exports);
    return defaultImport(referrer)(decision.type === 'redirect' ? decision.specifier : specifier, attributes);
  };

  return {
    callback(referrer, filename) {
      return async (specifier, _script, attributes) => {
        if (disposed) throw new Error(`import of ${JSON.stringify(specifier)} after its ${format} environment was released`);
        const given = { ...attributes } as Record<string, string>;
        const decided = handler()({ specifier, attributes: given, referrer: filename });
        if (isThenable(decided) && synchronous) {
          throw new TypeError(`the import handler returned a Promise for ${JSON.stringify(specifier)}; ${format} programs need a synchronous decision`);
        }
        const decision = checkDecision(await decided);
        return load(decision, specifier, referrer, given);
      };
    },
    dispose() {
      disposed = true;
      loaders.clear();
      modules = new WeakMap();
    },
  };
}
