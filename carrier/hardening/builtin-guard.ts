// Takes a built-in module, or single functions of one, away from programs. Node keeps one exports
// object per built-in, and every way a program reaches it returns that object: `import` (whose
// namespace is filled from it), `require`, `process.getBuiltinModule`, and module hooks (which can
// only redirect to a built-in, never make another copy). So the carrier changes that object once,
// before any program exists, and no path leads past it. Self-contained: an import policy can use it.
import { syncBuiltinESMExports } from 'node:module';
import { requireBuiltin as require } from './builtins.ts';
import { defineProperty, ownKeys } from './intrinsics.ts';

const { create, freeze, preventExtensions } = Object;

/** Makes a refusal error; called at every refused use, so each one is noticed. */
export type Refusal = (what: string) => Error;

/**
 * Makes every export of built-in `specifier` unusable: each function (class) becomes one that
 * throws `refuse(specifier)` when called or constructed, each other value a frozen empty object,
 * and the exports object takes no new ones. An `import` of it still resolves (an export that threw
 * on being read would break Node's syncBuiltinESMExports for good once an import had tried it),
 * but nothing in it does anything. The originals are dropped, so nothing a program can reach
 * still holds them.
 */
export function refuseBuiltin(specifier: string, refuse: Refusal): void {
  const exports = require(specifier) as Record<PropertyKey, unknown>;
  const keys = ownKeys(exports);
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const value = typeof exports[key] === 'function' ? refusing(specifier, String(key), refuse) : freeze(create(null));
    defineProperty(exports, key, { __proto__: null, value, writable: false, enumerable: true, configurable: false } as PropertyDescriptor);
  }
  preventExtensions(exports);
  syncBuiltinESMExports();
}

/** Replaces `name` of built-in `specifier` with a function that throws `refuse('<specifier>.<name>()')`, for `import` too. */
export function refuseExport(specifier: string, name: string, refuse: Refusal): void {
  const exports = require(specifier) as Record<string, unknown>;
  const value = refusing(`${specifier}.${name}()`, name, refuse);
  defineProperty(exports, name, { __proto__: null, value, writable: false, enumerable: true, configurable: false } as PropertyDescriptor);
  syncBuiltinESMExports();
}

/** A function named `name` that throws `refuse(what)` when called and when constructed. */
function refusing(what: string, name: string, refuse: Refusal): () => never {
  const refused = function (): never {
    throw refuse(what);
  };
  defineProperty(refused, 'name', { __proto__: null, value: name } as PropertyDescriptor);
  return freeze(refused);
}
