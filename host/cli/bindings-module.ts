// Loading a --bindings module: its exported functions, and objects of functions, become the
// bindings. Its own module so that `ptc run`'s fast path (resident-client.ts) loads only this.
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Bindings } from '../index.ts';
import { importFile } from './import-file.ts';
import { UsageError } from './usage-error.ts';

/** The bindings a module exports; a UsageError names the module when it cannot be loaded. */
export async function loadBindings(path: string): Promise<Bindings> {
  let module: Record<string, unknown>;
  try {
    module = await importFile(pathToFileURL(resolvePath(path)).href);
  } catch (error) {
    throw new UsageError(`cannot load --bindings ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
  const bindings: Bindings = {};
  // Node 23 and later add a 'module.exports' key to a CommonJS module's namespace (not an
  // identifier, so not a binding name); its value is the real exports object, which also holds
  // the exports the static analysis behind the named keys cannot see.
  const exports = 'module.exports' in module && isObject(module['module.exports'])
    ? module['module.exports']
    : Object.keys(module).length === 1 && isObject(module.default) ? module.default : module;
  for (const [name, value] of Object.entries(exports)) {
    if (name === 'default') continue;
    if (typeof value === 'function' || isObject(value)) bindings[name] = value as Bindings[string];
  }
  return bindings;
}

// A plain object or a module namespace (null prototype): a namespace of bindings.
function isObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

