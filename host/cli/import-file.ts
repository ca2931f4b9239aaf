// Importing a module file (a --bindings module) from the CLI, also inside the single executable.
// In a SEA, Node resolves the main script's own import() against built-ins only ("No such
// built-in module: file:///…") in a blob made without code cache, which is how the release builds
// every platform but the building machine's. A function compiled by node:vm with
// USE_MAIN_CONTEXT_DEFAULT_LOADER imports through Node's ordinary ESM loader instead, as the
// carrier's evaluators do.
import vm from 'node:vm';

type Importer = (url: string) => Promise<Record<string, unknown>>;
let seaImporter: Importer | undefined;

const inSea = (): boolean => (process.getBuiltinModule('node:sea') as { isSea?: () => boolean } | undefined)?.isSea?.() === true;

/** `import(url)`, through Node's default ESM loader even in the single executable. */
export function importFile(url: string): Promise<Record<string, unknown>> {
  if (!inSea()) return import(url);
  seaImporter ??= vm.runInThisContext('(url) => import(url)', {
    filename: 'ptc:import-file',
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  }) as Importer;
  // Node warns once that USE_MAIN_CONTEXT_DEFAULT_LOADER is experimental, synchronously when the
  // import starts; that is ptc's choice, not something the user should see on stderr.
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (!text?.includes('vm.USE_MAIN_CONTEXT_DEFAULT_LOADER')) (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return seaImporter(url);
  } finally {
    process.emitWarning = emitWarning;
  }
}
