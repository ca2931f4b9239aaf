// Node defines many of its globals (the web stream classes, File, FormData, Navigator, Storage,
// Performance, Crypto, …) as lazy data properties: reading one's descriptor loads its modules. A
// context that copied every descriptor at creation would load ~135 modules and carry ~19 MB more
// RSS in every idle retained carrier, for globals most programs never touch. So each copied
// global starts as a forwarding accessor, and its first read puts the real descriptor in place.
import { apply, defineProperty, getOwnPropertyDescriptor } from '../hardening/intrinsics.ts';

const propertyIsEnumerable = Object.prototype.propertyIsEnumerable;

/**
 * Defines `name` of the carrier's global on `target` without reading its descriptor yet. The first
 * read defines `settle(descriptor)` instead and returns its value; an assignment before that
 * defines a plain data property on `target` only, as an assignment to a copied data property would.
 */
export function defineLazyGlobal(target: object, name: string, settle: (descriptor: PropertyDescriptor) => PropertyDescriptor = (descriptor) => descriptor): void {
  const enumerable = apply(propertyIsEnumerable, globalThis, [name]) as boolean;
  defineProperty(target, name, {
    __proto__: null,
    enumerable,
    configurable: true,
    get() {
      const original = getOwnPropertyDescriptor(globalThis, name);
      if (original === undefined) return undefined;
      const descriptor = settle(original);
      defineProperty(target, name, descriptor);
      return 'value' in descriptor ? descriptor.value : descriptor.get === undefined ? undefined : apply(descriptor.get, target, []);
    },
    set(value: unknown) {
      defineProperty(target, name, { __proto__: null, value, writable: true, configurable: true, enumerable } as PropertyDescriptor);
    },
  } as PropertyDescriptor);
}
