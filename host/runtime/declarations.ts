// TypeScript declarations from tool schemas: the `.d.ts` text a model reads to call the tools.
// Dotted names become namespaces, descriptions become JSDoc, inputSchema the argument type and
// outputSchema the result. A name that is not an identifier is mapped (bindingPaths says how)
// and the JSDoc names the original.
import { AliasTable, isSchemaObject, pascalCase, schemaNotes, schemaType, type SchemaContext } from './schema-types.ts';
import { docBlock, stringLiteral } from './declaration-text.ts';
import { RESERVED_WORDS, RUNTIME_GLOBALS } from '../execution/bindings.ts';
import { DISCOVERY_DECLARATIONS, DISCOVERY_GLOBALS } from './discovery/globals.ts';
import { show } from '../../wire/show.ts';

/** A tool as harnesses describe it: MCP's shape, with dotted names for namespaces. */
export interface ToolSchema {
  name: string;
  description?: string;
  /** JSON Schema of the one argument object. Omitted: the tool takes any arguments. */
  inputSchema?: unknown;
  /** JSON Schema of the result. Omitted: `Promise<unknown>`. */
  outputSchema?: unknown;
}

/** For a front end that names its namespaces itself (`ptc mcp`: one per upstream). */
export interface DeclarationOptions {
  /** Each tool's name as its parts, outermost first, instead of its `name` split at dots: a part may hold a dot. */
  names?: ReadonlyArray<readonly string[]>;
  /** A JSDoc line for a top-level namespace, by its unmapped name: who declared what it holds. */
  namespaceDocs?: ReadonlyMap<string, string>;
  /**
   * Programs have the discovery globals `search` and `describe` (the runtime's `discovery`): a
   * top-level tool or namespace of either name is mapped (`search_`), and the text ends with
   * their declarations. @default false
   */
  discovery?: boolean;
}

/** The identifier for one segment of a tool name: invalid characters become `_`, a leading digit or reserved word gets one too. */
export function identifierFor(segment: string, topLevel: boolean, discovery = false): string {
  // The scoped REPL refuses a program that holds its generated code's prefix anywhere
  // (carrier/evaluators/scoped-repl/declarations.ts), so a name holding it could never be called.
  let name = segment.replace(/[^\w$]+/g, '_').replaceAll('__$binding_', '__$binding$_');
  if (name === '' || /^[0-9]/.test(name)) name = `_${name}`;
  // A global named `__proto__` would replace the global object's prototype instead of being defined.
  if (RESERVED_WORDS.has(name) || (topLevel && (RUNTIME_GLOBALS.has(name) || name === '__proto__' || (discovery && DISCOVERY_GLOBALS.has(name))))) name = `${name}_`;
  return name;
}

/**
 * The binding path (identifiers, outermost namespace first) of each tool, in order. A name is
 * split on dots, or given as its parts; a segment that collides after mapping gets `_2`, `_3`, …
 * in the order given. Throws when a name is empty, repeated, or both a tool and a namespace.
 */
export function bindingPaths(names: ReadonlyArray<string | readonly string[]>, options: { discovery?: boolean } = {}): string[][] {
  const seen = new Set<string>();
  const tools = new Set<string>();
  const namespaces = new Set<string>();
  // Per parent path: original segment -> identifier, and the identifiers used.
  const mapped = new Map<string, Map<string, string>>();
  const used = new Map<string, Set<string>>();
  return names.map((name, index) => {
    let segments: readonly string[];
    if (Array.isArray(name)) {
      if (name.length === 0 || !name.every((segment) => typeof segment === 'string')) throw new TypeError(`tool ${index}: name parts must be strings, got ${show(name)}`);
      segments = name;
    } else {
      if (typeof name !== 'string' || name === '' || name.split('.').some((segment) => segment === '')) {
        throw new TypeError(`tool ${index}: name must be a non-empty string of dot-separated parts, got ${show(name)}`);
      }
      segments = name.split('.');
    }
    const key = JSON.stringify(segments);
    const shown = JSON.stringify(segments.join('.'));
    if (seen.has(key)) throw new TypeError(`tool ${index}: name ${shown} is used twice`);
    seen.add(key);
    const path: string[] = [];
    for (const segment of segments) {
      // Paths are joined with NUL, which no identifier holds, so a parent path is never ambiguous.
      const parent = path.join('\0');
      const mine = mapped.get(parent) ?? new Map<string, string>();
      mapped.set(parent, mine);
      let id = mine.get(segment);
      if (id === undefined) {
        const taken = used.get(parent) ?? new Set<string>();
        used.set(parent, taken);
        const base = identifierFor(segment, path.length === 0, options.discovery === true);
        id = base;
        for (let n = 2; taken.has(id); n++) id = `${base}_${n}`;
        taken.add(id);
        mine.set(segment, id);
      }
      path.push(id);
    }
    const full = path.join('.');
    for (let i = 1; i < path.length; i++) {
      const prefix = path.slice(0, i).join('.');
      if (tools.has(prefix)) throw new TypeError(`tool ${index}: name ${shown} needs a namespace where another tool is named ${JSON.stringify(prefix)}`);
      namespaces.add(prefix);
    }
    if (namespaces.has(full)) throw new TypeError(`tool ${index}: name ${shown} is also a namespace of other tools`);
    tools.add(full);
    return path;
  });
}

interface Namespace {
  functions: string[];
  children: Map<string, Namespace>;
}

/** The `.d.ts` text for `tools`: one function per tool, namespaces for dotted names, then the named types their `$ref`s use. */
export function declarations(tools: readonly ToolSchema[], options: DeclarationOptions = {}): string {
  const { names, paths } = checkedPaths(tools, options);
  const text = declareSelected(tools, names, paths, undefined, options);
  return options.discovery === true ? `${text}\n${DISCOVERY_DECLARATIONS}` : text;
}

/** Checks a tool list and gives each tool's name (as given) and binding path. */
export function checkedPaths(tools: readonly ToolSchema[], options: DeclarationOptions): { names: ReadonlyArray<string | readonly string[]>; paths: string[][] } {
  if (!Array.isArray(tools)) throw new TypeError(`declarations() expects an array of tools, got ${show(tools)}`);
  tools.forEach(checkTool);
  const names = options.names ?? tools.map((tool) => tool.name);
  if (names.length !== tools.length) throw new TypeError(`declarations(): ${names.length} names for ${tools.length} tools`);
  return { names, paths: bindingPaths(names, { discovery: options.discovery === true }) };
}

/**
 * The declarations of the tools at `selected` indices (all when undefined), each at the path the
 * whole list gives it, so one tool's text is what the whole list's declarations say of it.
 */
export function declareSelected(tools: readonly ToolSchema[], names: ReadonlyArray<string | readonly string[]>, paths: string[][], selected: ReadonlySet<number> | undefined, options: DeclarationOptions): string {
  // The unmapped top-level name of each namespace, for its JSDoc.
  const originals = new Map<string, string>();
  names.forEach((name, index) => originals.set(paths[index]![0]!, typeof name === 'string' ? name.split('.')[0]! : name[0]!));
  const aliases = new AliasTable(paths.map((path) => path[0]!));
  const root: Namespace = { functions: [], children: new Map() };
  tools.forEach((tool, index) => {
    if (selected !== undefined && !selected.has(index)) return;
    const path = paths[index]!;
    let space = root;
    for (const segment of path.slice(0, -1)) {
      if (!space.children.has(segment)) space.children.set(segment, { functions: [], children: new Map() });
      space = space.children.get(segment)!;
    }
    const original = typeof names[index] === 'string' ? names[index] : (names[index] as readonly string[]).join('.');
    space.functions.push(declareFunction(tool, original, path, aliases, path.length - 1));
  });

  const out: string[] = [];
  const emit = (space: Namespace, depth: number): void => {
    const pad = '  '.repeat(depth);
    out.push(...space.functions);
    for (const [name, child] of space.children) {
      const doc = depth === 0 ? options.namespaceDocs?.get(originals.get(name)!) : undefined;
      if (doc !== undefined) out.push(docBlock([doc], pad).trimEnd());
      out.push(`${pad}${depth === 0 ? 'declare ' : ''}namespace ${name} {`);
      emit(child, depth + 1);
      out.push(`${pad}}`);
    }
  };
  emit(root, 0);
  const types = aliases.entries();
  if (types.length > 0) out.push('', '// Types the tools above refer to.');
  for (const [name, body] of types) out.push(`type ${name} = ${body};`);
  return `${out.join('\n')}\n`;
}

function checkTool(tool: ToolSchema, index: number): void {
  if (!isSchemaObject(tool)) throw new TypeError(`tool ${index} must be an object {name, description?, inputSchema?, outputSchema?}, got ${show(tool)}`);
  for (const key of Object.keys(tool)) {
    if (!['name', 'description', 'inputSchema', 'outputSchema', 'title', 'annotations', '_meta'].includes(key)) throw new TypeError(`tool ${index} (${show(tool.name)}): unknown field "${key}"`);
  }
  if (tool.description !== undefined && typeof tool.description !== 'string') throw new TypeError(`tool ${show(tool.name)}: description must be a string, got ${show(tool.description)}`);
  for (const key of ['inputSchema', 'outputSchema'] as const) {
    const schema = tool[key];
    if (schema !== undefined && typeof schema !== 'boolean' && !isSchemaObject(schema)) throw new TypeError(`tool ${show(tool.name)}: ${key} must be a JSON Schema object, got ${show(schema)}`);
  }
}

function declareFunction(tool: ToolSchema, original: string, path: string[], aliases: AliasTable, depth: number): string {
  const pad = '  '.repeat(depth);
  const name = path.at(-1)!;
  const prefix = pascalCase(path.join('_'));
  const context = (schema: unknown, suffix: string): SchemaContext => ({
    root: schema,
    rootKey: JSON.stringify([isSchemaObject(schema) ? schema.$defs : undefined, isSchemaObject(schema) ? schema.definitions : undefined]),
    prefix,
    aliases,
    rootAliasWanted: `${prefix}${suffix}`,
  });
  const docs: string[] = [];
  if (tool.description) docs.push(tool.description);
  if (path.join('.') !== original) docs.push(`(The tool's name is ${stringLiteral(original)}; call it as ${path.join('.')}.)`);

  let parameters = '...args: unknown[]';
  if (tool.inputSchema !== undefined) {
    const ctx = context(tool.inputSchema, 'Input');
    const type = rootType(tool.inputSchema, ctx, aliases, depth);
    // The schema's own description says what the argument object is.
    const argumentDoc = isSchemaObject(tool.inputSchema) && typeof tool.inputSchema.description === 'string' && tool.inputSchema.description !== tool.description ? tool.inputSchema.description : undefined;
    // The argument object's own constraints (a `not`, an if/then, minProperties) have no property to sit on.
    const notes = isSchemaObject(tool.inputSchema) ? schemaNotes(tool.inputSchema) : [];
    if (argumentDoc) docs.push(`@param args ${argumentDoc}`, ...notes);
    else if (notes.length > 0) docs.push(`@param args ${notes[0]}`, ...notes.slice(1));
    parameters = `args${acceptsNothing(tool.inputSchema) ? '?' : ''}: ${type}`;
  }
  let result = 'unknown';
  if (tool.outputSchema !== undefined) {
    const ctx = context(tool.outputSchema, 'Output');
    result = rootType(tool.outputSchema, ctx, aliases, depth);
    const resultDoc = isSchemaObject(tool.outputSchema) && typeof tool.outputSchema.description === 'string' ? tool.outputSchema.description : undefined;
    const notes = isSchemaObject(tool.outputSchema) ? schemaNotes(tool.outputSchema) : [];
    if (resultDoc) docs.push(`@returns ${resultDoc}`, ...notes);
    else if (notes.length > 0) docs.push(`@returns ${notes[0]}`, ...notes.slice(1));
  }
  return `${docBlock(docs, pad)}${pad}${depth === 0 ? 'declare ' : ''}function ${name}(${parameters}): Promise<${result}>;`;
}

// The argument may be left out when an empty object would do: no required property, and no
// combinator or reference that could require one.
function acceptsNothing(schema: unknown): boolean {
  if (schema === true) return true;
  if (!isSchemaObject(schema)) return false;
  if (Array.isArray(schema.required) && schema.required.length > 0) return false;
  return !['anyOf', 'oneOf', 'allOf', '$ref', 'if', 'const', 'enum'].some((key) => key in schema) && (schema.type === undefined || schema.type === 'object');
}

// A root that refers to itself (`$ref: "#"`) is declared as a named type, which its references use.
function rootType(schema: unknown, ctx: SchemaContext, aliases: AliasTable, depth: number): string {
  const type = schemaType(schema, ctx, depth);
  if (ctx.rootAlias === undefined) return type;
  aliases.define(ctx.rootAlias, schemaType(schema, ctx, 0));
  return ctx.rootAlias;
}
