// JSON Schema -> TypeScript type text, for the declarations a model reads. Real-world tool
// schemas are messy, so nothing here throws: a part that cannot be expressed becomes `unknown`
// (with a comment saying why) and the rest of the type survives.
import { docBlock, inlineComment, literalType, stringLiteral } from './declaration-text.ts';

const MAX_DEPTH = 48;
type Schema = Record<string, unknown>;

// Global type names the declarations use or a model would take for the standard ones: a `$ref`
// to `#/$defs/Promise` must not redefine `Promise<…>` for every tool.
const GLOBAL_TYPES = [
  'Promise', 'PromiseLike', 'Array', 'ReadonlyArray', 'Record', 'Partial', 'Required', 'Readonly', 'Pick', 'Omit', 'Exclude', 'Extract',
  'NonNullable', 'Awaited', 'ReturnType', 'Parameters', 'Object', 'String', 'Number', 'Boolean', 'Symbol', 'BigInt', 'Function', 'Date',
  'Error', 'RegExp', 'Map', 'Set', 'WeakMap', 'WeakSet', 'JSON', 'Math', 'Iterable', 'Uint8Array', 'ArrayBuffer', 'Image', 'BindingError',
];

/** Named types made from `$ref`s, shared by every tool of one declarations() call. */
export class AliasTable {
  readonly #byKey = new Map<string, string>();
  readonly #bodies = new Map<string, string>();
  readonly #taken: Set<string>;

  constructor(taken: Iterable<string>) {
    this.#taken = new Set([...GLOBAL_TYPES, ...taken]);
  }

  /** The alias for `key`, created (and its body rendered by `render`) on first use. */
  name(key: string, wanted: string, prefix: string, render: () => string): string {
    const known = this.#byKey.get(key);
    if (known !== undefined) return known;
    let name = wanted;
    if (this.#taken.has(name)) name = `${prefix}${wanted}`;
    for (let n = 2; this.#taken.has(name); n++) name = `${prefix}${wanted}${n}`;
    this.#taken.add(name);
    // Registered before rendering, so a recursive reference finds the name.
    this.#byKey.set(key, name);
    this.#bodies.set(name, render());
    return name;
  }

  /** Reserves a name the caller will declare itself (a tool's recursive root type). */
  reserve(wanted: string): string {
    let name = wanted;
    for (let n = 2; this.#taken.has(name); n++) name = `${wanted}${n}`;
    this.#taken.add(name);
    return name;
  }

  /** Sets the body of a reserved name. */
  define(name: string, body: string): void {
    this.#bodies.set(name, body);
  }

  entries(): Array<[string, string]> {
    return [...this.#bodies];
  }
}

/** One schema document being rendered: the root that `#` pointers resolve in. */
export interface SchemaContext {
  readonly root: unknown;
  /** Identifies the root's definitions, so tools sharing identical `$defs` share aliases. */
  readonly rootKey: string;
  /** PascalCase tool name, prefixed to an alias whose plain name is taken. */
  readonly prefix: string;
  readonly aliases: AliasTable;
  /** The name `$ref: "#"` refers to; set when the root is referenced (recursive roots). */
  rootAlias?: string;
  readonly rootAliasWanted: string;
}

export function isSchemaObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The TypeScript type of `schema`; `indent` is the nesting level of the line it starts on, and
 * `documented` says the caller's JSDoc already shows the schema's format.
 */
export function schemaType(schema: unknown, ctx: SchemaContext, indent = 0, depth = 0, documented = false): string {
  if (schema === true || schema === undefined) return 'unknown';
  if (schema === false) return 'never';
  if (!isSchemaObject(schema)) return 'unknown';
  if (depth > MAX_DEPTH) return 'unknown /* nested too deeply */';
  const next = (sub: unknown, extra = 0): string => schemaType(sub, ctx, indent + extra, depth + 1);
  const parts: string[] = [];
  if (typeof schema.$ref === 'string') parts.push(refType(schema.$ref, ctx, depth));
  else if (typeof schema.$dynamicRef === 'string' || typeof schema.$recursiveRef === 'string') parts.push('unknown /* $dynamicRef is not followed */');
  const core = coreType(schema, ctx, indent, depth, documented);
  if (core !== undefined) parts.push(core);
  if (Array.isArray(schema.allOf)) parts.push(...schema.allOf.map((sub) => next(sub)));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = schema[key];
    if (Array.isArray(members) && members.length > 0) parts.push(union(members.map((sub) => next(sub))));
  }
  // if/then/else: valid values are (if & then) | (not-if & else). TypeScript has no negation, so
  // the else branch is widened to the whole of `else`; without an else nothing narrows the type.
  if (schema.if !== undefined && schema.else !== undefined) {
    const ifThen = intersection([next(schema.if), schema.then === undefined ? 'unknown' : next(schema.then)]);
    parts.push(union([ifThen, next(schema.else)]));
  }
  let text = intersection(parts);
  if (schema.nullable === true && text !== 'unknown') text = union([text, 'null']);
  return text;
}

function refType(ref: string, ctx: SchemaContext, depth: number): string {
  if (ref === '#' || ref === '') {
    ctx.rootAlias ??= ctx.aliases.reserve(ctx.rootAliasWanted);
    return ctx.rootAlias;
  }
  if (!ref.startsWith('#/')) return `unknown /* ${inlineComment(`$ref ${JSON.stringify(ref)} is not followed`)} */`;
  const unresolved = `unknown /* ${inlineComment(`$ref ${JSON.stringify(ref)} does not resolve`)} */`;
  let segments: string[];
  try {
    segments = ref.slice(2).split('/').map((part) => decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~'));
  } catch {
    return unresolved;
  }
  let target: unknown = ctx.root;
  for (const segment of segments) {
    // Own members only: `#/__proto__` or `#/constructor` names nothing in the schema.
    if ((!isSchemaObject(target) && !Array.isArray(target)) || !Object.hasOwn(target, segment)) return unresolved;
    target = (target as Record<string, unknown>)[segment];
    if (target === undefined) return unresolved;
  }
  const wanted = pascalCase(segments.at(-1)!) || 'Def';
  return ctx.aliases.name(`${ctx.rootKey}\0${ref}`, wanted, ctx.prefix, () => schemaType(target, ctx, 0, depth + 1));
}

function coreType(schema: Schema, ctx: SchemaContext, indent: number, depth: number, documented: boolean): string | undefined {
  if ('const' in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.length === 0 ? 'never' : union(schema.enum.map(literal));
  const types = Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : [];
  if (types.length === 0) {
    if (['properties', 'additionalProperties', 'patternProperties', 'required'].some((key) => key in schema)) types.push('object');
    else if (['items', 'prefixItems'].some((key) => key in schema)) types.push('array');
    else return undefined;
  }
  return union(types.map((type) => {
    switch (type) {
      case 'string':
        return typeof schema.format === 'string' && !documented ? `string /* ${inlineComment(schema.format)} */` : 'string';
      case 'integer':
        return 'number /* integer */';
      case 'number':
      case 'boolean':
      case 'null':
        return type;
      case 'array':
        return arrayType(schema, ctx, indent, depth);
      case 'object':
        return objectType(schema, ctx, indent, depth);
      default:
        return `unknown /* ${inlineComment(`type ${json(type)}`)} */`;
    }
  }));
}

function arrayType(schema: Schema, ctx: SchemaContext, indent: number, depth: number): string {
  const next = (sub: unknown): string => schemaType(sub, ctx, indent, depth + 1);
  // 2020-12 tuples are prefixItems (+ items for the rest); draft-07 tuples are items: [...] (+ additionalItems).
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : undefined;
  if (prefix === undefined) {
    return schema.items === undefined ? 'unknown[]' : `${group(next(schema.items))}[]`;
  }
  const rest = Array.isArray(schema.prefixItems) ? schema.items : schema.additionalItems;
  const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
  const elements = prefix.map((sub, index) => `${next(sub)}${index >= min ? '?' : ''}`);
  const closed = rest === false || (typeof schema.maxItems === 'number' && schema.maxItems <= prefix.length);
  if (!closed) elements.push(`...${group(rest === undefined || rest === true ? 'unknown' : next(rest))}[]`);
  return `[${elements.join(', ')}]`;
}

function objectType(schema: Schema, ctx: SchemaContext, indent: number, depth: number): string {
  const pad = '  '.repeat(indent + 1);
  const properties = isSchemaObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((key): key is string => typeof key === 'string') : []);
  const members: string[] = [];
  for (const [key, sub] of Object.entries(properties)) {
    const readonly = isSchemaObject(sub) && sub.readOnly === true ? 'readonly ' : '';
    members.push(`${jsDoc(sub, pad)}${pad}${readonly}${propertyKey(key)}${required.has(key) ? '' : '?'}: ${schemaType(sub, ctx, indent + 1, depth + 1, true)};`);
  }
  for (const key of required) if (!Object.hasOwn(properties, key)) members.push(`${pad}${propertyKey(key)}: unknown;`);

  // One string index signature is all TypeScript allows: patternProperties and
  // additionalProperties share it, and its JSDoc says which keys have which type.
  const indexTypes: string[] = [];
  const indexDocs: string[] = [];
  if (isSchemaObject(schema.patternProperties)) {
    for (const [pattern, sub] of Object.entries(schema.patternProperties)) {
      const type = schemaType(sub, ctx, indent + 1, depth + 1);
      indexTypes.push(type);
      indexDocs.push(`keys matching /${pattern}/: ${plain(type)}`);
    }
  }
  const additional = schema.additionalProperties;
  const open = additional === undefined || additional === true;
  if (isSchemaObject(additional)) {
    const type = schemaType(additional, ctx, indent + 1, depth + 1);
    indexTypes.push(type);
    if (indexDocs.length > 0) indexDocs.push(`other keys: ${plain(type)}`);
  } else if (open && members.length === 0 && indexTypes.length === 0 && !isSchemaObject(schema.properties)) {
    // `properties: {}` says there is nothing to pass; an object with no properties at all is a free-form map.
    indexTypes.push('unknown');
  }
  if (isSchemaObject(schema.propertyNames)) {
    const names = schema.propertyNames;
    if (typeof names.pattern === 'string') indexDocs.push(`key names match /${names.pattern}/`);
    if (Array.isArray(names.enum)) indexDocs.push(`key names are ${names.enum.map((name) => json(name)).join(', ')}`);
  }
  const index = indexTypes.length === 0 ? [] : [`${docBlock(indexDocs, pad)}${pad}[key: string]: ${union(indexTypes)};`];
  const block = (lines: string[]): string => `{\n${lines.join('\n')}\n${'  '.repeat(indent)}}`;
  if (members.length === 0 && index.length === 0) return '{}';
  if (members.length === 0) return block(index);
  // Named properties whose types differ from the index signature's would not type-check in one
  // literal; an intersection keeps both without widening either.
  return index.length === 0 ? block(members) : `${block(members)} & ${block(index)}`;
}

/** The JSDoc block for a property's schema: description, format and constraints. */
export function jsDoc(schema: unknown, pad: string, extra: string[] = []): string {
  const lines = isSchemaObject(schema) ? annotations(schema) : [];
  return docBlock([...lines, ...extra], pad);
}

const CONSTRAINTS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'contentEncoding', 'contentMediaType'];

function annotations(schema: Schema): string[] {
  const lines: string[] = [];
  if (typeof schema.description === 'string') lines.push(schema.description);
  else if (typeof schema.title === 'string') lines.push(schema.title);
  return [...lines, ...schemaNotes(schema)];
}

/** What a schema says besides its description and its type: format, constraints, default, example, if/then, not, deprecated. */
export function schemaNotes(schema: Schema): string[] {
  const lines: string[] = [];
  if (typeof schema.format === 'string') lines.push(`@format ${schema.format}`);
  const constraints = CONSTRAINTS.filter((key) => key in schema && schema[key] !== false).map((key) => `${key} ${key === 'pattern' ? `/${String(schema[key])}/` : json(schema[key])}`);
  if (constraints.length > 0) lines.push(constraints.join(', '));
  if ('default' in schema) lines.push(`@default ${json(schema.default)}`);
  if (Array.isArray(schema.examples) && schema.examples.length > 0) lines.push(`@example ${json(schema.examples[0])}`);
  if (schema.if !== undefined && schema.then !== undefined && schema.else === undefined) lines.push(`when it matches ${json(schema.if)}, it must also match ${json(schema.then)}`);
  if (schema.not !== undefined) lines.push(`must not match ${json(schema.not)}`);
  if (schema.deprecated === true) lines.push('@deprecated');
  return lines;
}

function literal(value: unknown): string {
  // JSON text is also TypeScript literal-type syntax: strings, numbers, booleans, null, and
  // object and tuple literal types for structured consts.
  try {
    return literalType(value) ?? 'unknown';
  } catch {
    return 'unknown /* too deep to show */';
  }
}

/** JSON text for JSDoc; a value nested past the stack (JSON.stringify recurses) is not shown. */
function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return '(too deep to show)';
  }
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

function propertyKey(key: string): string {
  return IDENTIFIER.test(key) ? key : stringLiteral(key);
}

// A type shown inside a JSDoc block cannot keep its own comments.
function plain(type: string): string {
  return type.replace(/ ?\/\*.*?\*\//g, '');
}

export function pascalCase(text: string): string {
  const words = text.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const name = words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
  return /^[0-9]/.test(name) ? `T${name}` : name;
}

function union(types: string[]): string {
  const unique = [...new Set(types)];
  if (unique.includes('unknown')) return 'unknown';
  const kept = unique.filter((type) => type !== 'never');
  if (kept.length === 0) return 'never';
  return kept.length === 1 ? kept[0]! : kept.map((type) => (topLevel(type, '&') || type.startsWith('...') ? `(${type})` : type)).join(' | ');
}

function intersection(types: string[]): string {
  const kept = [...new Set(types)].filter((type) => type !== 'unknown');
  if (kept.includes('never')) return 'never';
  if (kept.length === 0) return 'unknown';
  return kept.length === 1 ? kept[0]! : kept.map((type) => (topLevel(type, '|') ? `(${type})` : type)).join(' & ');
}

/** Parenthesizes a type that would not bind as one operand of `[]`. */
function group(type: string): string {
  return topLevel(type, '|') || topLevel(type, '&') ? `(${type})` : type;
}

/** Whether `operator` appears outside brackets, strings and comments. */
function topLevel(type: string, operator: '|' | '&'): boolean {
  let depth = 0;
  for (let i = 0; i < type.length; i++) {
    const char = type[i]!;
    if (char === '"') {
      for (i++; i < type.length && type[i] !== '"'; i++) if (type[i] === '\\') i++;
    } else if (char === '/' && type[i + 1] === '*') {
      const end = type.indexOf('*/', i + 2);
      i = end < 0 ? type.length : end + 1;
    } else if ('{[('.includes(char)) depth++;
    else if ('}])'.includes(char)) depth--;
    else if (depth === 0 && char === operator) return true;
  }
  return false;
}
