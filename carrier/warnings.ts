// Experimental-feature warnings that the runtime itself triggers (vm's main-context loader) are not
// the program's output; warnings the program causes still print.
const RUNTIME_FEATURES = ['vm.USE_MAIN_CONTEXT_DEFAULT_LOADER', 'stripTypeScriptTypes'];

/** Runs `action` with warnings about the runtime's own experimental features dropped. */
export function withoutRuntimeWarnings<T>(action: () => T): T {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && RUNTIME_FEATURES.some((feature) => text.startsWith(feature))) return;
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return action();
  } finally {
    process.emitWarning = emitWarning;
  }
}
