// Host bindings: the agent's tools. A nested object of functions becomes a namespace, so
// `{ github: { listIssues } }` is called as `github.listIssues(...)` in the program. Arguments and
// results are lossless JSON checked here, on the host; a result may carry images made by `image()`.
import { types } from 'node:util';
import { encodeJson, LossyValueError, isPlainObject } from '../../wire/json.ts';
import { decodeJsonAsync } from '../../wire/decode.ts';
import { describeThrown } from '../../wire/thrown.ts';
import type { ImageDescriptor, ImagePlacement, InvokeResult } from '../../wire/messages.ts';
import { show } from '../../wire/show.ts';

export type BindingFunction = (...args: any[]) => unknown;
export interface Bindings {
  [name: string]: BindingFunction | Bindings;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/** Globals every program has, which a top-level binding cannot replace; declarations map them (`inspect_`). */
export const RUNTIME_GLOBALS: ReadonlySet<string> = new Set(['inspect', 'Image', 'BindingError', 'yieldControl', 'globalThis', 'process', 'console', 'undefined', 'NaN', 'Infinity', 'eval', 'arguments']);
// A binding global is a name the program writes as an identifier, so it cannot be a reserved word
// (ES2024 12.7.2, with the strict-mode ones and `await`, which module-like and async code reserve).
export const RESERVED_WORDS: ReadonlySet<string> = new Set([
  'await', 'break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default', 'delete', 'do', 'else', 'enum',
  'export', 'extends', 'false', 'finally', 'for', 'function', 'if', 'import', 'in', 'instanceof', 'new', 'null', 'return',
  'super', 'switch', 'this', 'throw', 'true', 'try', 'typeof', 'var', 'void', 'while', 'with', 'yield',
  'implements', 'interface', 'let', 'package', 'private', 'protected', 'public', 'static',
]);
const imageBrand = Symbol.for('ptc.ImageRef');
const imageRefPrototype = Object.freeze({ [imageBrand]: true });

/** A file to hand to the program as an Image; made with `image(path)`. */
export interface ImageRef {
  readonly [imageBrand]: true;
  readonly path: string;
}

/** Marks a file (PNG, JPEG, GIF or WebP) as an image for a binding to return. */
export function image(path: string): ImageRef {
  if (typeof path !== 'string' || path === '') throw new TypeError(`image() expects a file path, got ${show(path)}`);
  // Not a plain object, so the result encoder hands it to replaceObject instead of rejecting the brand key.
  return Object.freeze(Object.assign(Object.create(imageRefPrototype) as ImageRef, { path }));
}

export function isImageRef(value: unknown): value is ImageRef {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[imageBrand] === true;
}

/** Flattens a bindings object to dotted names, validating names and leaves. */
export function flattenBindings(bindings: unknown): Map<string, BindingFunction> {
  const flat = new Map<string, BindingFunction>();
  if (bindings === undefined) return flat;
  const visit = (node: unknown, prefix: string): void => {
    if (typeof node !== 'object' || node === null || Array.isArray(node) || !isPlainObject(node)) {
      throw new TypeError(`bindings${prefix === '' ? '' : ` "${prefix}"`} must be a plain object of functions, got ${show(node)}`);
    }
    for (const [key, value] of Object.entries(node)) {
      const name = prefix === '' ? key : `${prefix}.${key}`;
      if (!IDENTIFIER.test(key)) throw new TypeError(`binding name "${name}" is not a JavaScript identifier`);
      if (prefix === '') {
        const problem = globalNameProblem(key);
        if (problem !== undefined) throw new TypeError(`binding name "${name}" ${problem}`);
      }
      if (typeof value === 'function') flat.set(name, value as BindingFunction);
      else visit(value, name);
    }
  };
  visit(bindings, '');
  return flat;
}

/** Why a top-level binding name cannot be a global, or undefined when it can. */
function globalNameProblem(key: string): string | undefined {
  if (RUNTIME_GLOBALS.has(key)) return 'is reserved by the runtime';
  if (RESERVED_WORDS.has(key)) return `is a reserved word, which a program cannot call as a global; put it in a namespace (ns.${key})`;
  // Assigning it would replace the global object's prototype instead of defining a global.
  if (key === '__proto__') return 'cannot be a global: it names the global object\'s prototype; put it in a namespace';
  return undefined;
}

/** Decodes a program's argument text (long text in slices, so other runs keep going); rejects with TypeError when it is not a JSON array. */
export async function decodeArguments(text: string): Promise<unknown[]> {
  const args = await decodeJsonAsync(text);
  if (!Array.isArray(args)) throw new TypeError('binding arguments must be a JSON array');
  return args;
}

/** Encodes a binding's result; images found in it are registered and placed by path. */
export async function encodeResult(
  name: string,
  result: unknown,
  registerImage: (path: string) => Promise<ImageDescriptor>,
): Promise<InvokeResult> {
  const found: Array<{ at: Array<string | number>; ref: ImageRef }> = [];
  collectImages(result, found);
  const images: ImagePlacement[] = [];
  for (const { at, ref } of found) images.push({ at, image: await registerImage(ref.path) });
  if (result === undefined) return { images };
  try {
    const value = encodeJson(result, 'result', {
      replaceObject: (object) => (isImageRef(object) ? 'null' : undefined),
      isProxy: types.isProxy,
    });
    return { value, images };
  } catch (error) {
    if (error instanceof LossyValueError) {
      throw Object.assign(new TypeError(`binding ${name} returned a value that is not lossless JSON: ${error.message}`), { code: 'PTC_INVALID_RESULT' });
    }
    throw error;
  }
}

interface Visit {
  value: unknown;
  key: string | number;
  parent: Visit | undefined;
  /** Set on the marker that takes `value` off the current path once its members are done. */
  leave?: boolean;
}

/** Finds image() refs in a result, iteratively: a result may nest thousands of levels deep. */
function collectImages(result: unknown, found: Array<{ at: Array<string | number>; ref: ImageRef }>): void {
  const pending: Visit[] = [{ value: result, key: '', parent: undefined }];
  // Objects on the path from the root: a cycle stops here (the encoder reports it); a value shared
  // by two members is visited under each, so each place gets its image.
  const onPath = new Set<object>();
  while (pending.length > 0) {
    const visit = pending.pop()!;
    const { value } = visit;
    if (typeof value !== 'object' || value === null) continue;
    if (visit.leave) {
      onPath.delete(value);
      continue;
    }
    if (onPath.has(value)) continue;
    if (isImageRef(value)) {
      found.push({ at: pathOf(visit), ref: value });
      continue;
    }
    const entries: Array<[string | number, unknown]> = Array.isArray(value)
      ? value.map((item, index) => [index, item])
      : isPlainObject(value) ? Object.entries(value) : [];
    onPath.add(value);
    pending.push({ value, key: visit.key, parent: visit.parent, leave: true });
    // Pushed in reverse so that images are found in document order.
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, item] = entries[index]!;
      if (typeof item === 'object' && item !== null) pending.push({ value: item, key, parent: visit });
    }
  }
}

function pathOf(visit: Visit): Array<string | number> {
  const at: Array<string | number> = [];
  for (let node: Visit | undefined = visit; node?.parent !== undefined; node = node.parent) at.push(node.key);
  return at.reverse();
}

/**
 * What a binding threw, as the Error the reply carries: a string message and a string code, read
 * once and defensively. The host's own function may throw anything (a BigInt, a Proxy, an object
 * with a throwing getter); a value the reply cannot carry must not leave the call unanswered.
 */
export function bindingFailure(thrown: unknown): Error {
  const { message, code } = describeThrown(thrown);
  return Object.assign(new Error(message), code !== undefined ? { code } : {});
}
