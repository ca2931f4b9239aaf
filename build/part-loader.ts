// Loads a part of the single executable (build/parts/, embedded by build/build.ts as the assets
// `<name>.cjs` and, for the platform that built it, `<name>.cache`): compiled with its V8 code
// cache when there is one that V8 accepts, else from its source, and run as the CommonJS module
// esbuild made of it, with the main script's own require.
import { getAsset } from 'node:sea';
import vm from 'node:vm';

declare const require: NodeJS.Require;

/** The wrapper build.ts writes each part in, so that the asset is the exact text compiled (and cached), with no copy made to wrap it. */
export const PART_WRAPPER = ['(function (exports, require, module, __filename, __dirname) {', '\n})'] as const;

const loaded = new Map<string, unknown>();

/** The exports of the part `name`, loaded once. */
export function loadPart<T>(name: string): T {
  if (loaded.has(name)) return loaded.get(name) as T;
  const source = getAsset(`${name}.cjs`, 'utf8');
  let cachedData: Buffer | undefined;
  try {
    cachedData = Buffer.from(getAsset(`${name}.cache`));
  } catch {
    cachedData = undefined; // a cross-built executable: its parts compile from source
  }
  const script = new vm.Script(source, { filename: `ptc:${name}.cjs`, ...(cachedData !== undefined ? { cachedData } : {}) });
  const module = { exports: {} as T };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, require, module, __filename, __dirname);
  loaded.set(name, module.exports);
  return module.exports;
}
