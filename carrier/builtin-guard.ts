// Takes a built-in module, or single functions of one, away from programs. Node keeps one exports
// object per built-in, and every way a program reaches it returns that object: `import` (whose
// namespace is filled from it), `require`, `process.getBuiltinModule`, and module hooks (which can
// only redirect to a built-in, never make another copy). So the carrier changes that object once,
// before any program exists, and no path leads past it. Self-contained: an import policy can use it.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { defineProperty, ownKeys } from './intrinsics.ts';

const require = createRequire(import.meta.url);
const { preventExtensions } = Object;

/** Makes a refusal error; called at every refused use, so each one is noticed. */
export type Refusal = (what: string) => Error;

/**
 * Makes every export of built-in `specifier` throw `refuse(specifier)`: an `import` of it rejects,
 * and `require()` or `getBuiltinModule()` return an object whose every property throws. The
 * originals are dropped, so nothing a program can reach still holds them.
 */
export function refuseBuiltin(specifier: string, refuse: Refusal): void {
  const exports = require(specifier) as object;
  const keys = ownKeys(exports);
  for (let index = 0; index < keys.length; index++) {
    const get = function (): never {
      throw refuse(specifier);
    };
    defineProperty(exports, keys[index]!, { __proto__: null, get, enumerable: true, configurable: false } as PropertyDescriptor);
  }
  preventExtensions(exports);
  syncBuiltinESMExports();
}

/** Replaces `name` of built-in `specifier` with a function that throws `refuse('<specifier>.<name>()')`, for `import` too. */
export function refuseExport(specifier: string, name: string, refuse: Refusal): void {
  const exports = require(specifier) as Record<string, unknown>;
  const what = `${specifier}.${name}()`;
  const refused = function (): never {
    throw refuse(what);
  };
  defineProperty(refused, 'name', { __proto__: null, value: name } as PropertyDescriptor);
  defineProperty(exports, name, { __proto__: null, value: refused, writable: false, enumerable: true, configurable: false } as PropertyDescriptor);
  syncBuiltinESMExports();
}
