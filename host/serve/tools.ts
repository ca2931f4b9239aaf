// A client's tool list becomes the run's bindings: each `{name}` is a function that asks the
// client to run the tool (an `invoke` request) and resolves with its answer. Dotted names make
// namespaces, so `github.listIssues` is called as `github.listIssues(...)` in the program.
import { bindingPaths, type BindingFunction, type Bindings } from '../index.ts';
import { ErrorCode, RpcError } from './wire.ts';
import { show } from '../../wire/show.ts';

export interface Tool {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

/** Asks the client to run one tool; rejects with the client's error. */
export type CallTool = (name: string, args: unknown[]) => Promise<unknown>;

const invalid = (message: string): RpcError => new RpcError(ErrorCode.invalidParams, `run: ${message}`);

/**
 * Checks a `tools` parameter. Members other than the four a tool has are ignored, so an entry of an
 * MCP `tools/list` answer (with its `title` and `annotations`) can be passed as it is.
 */
export function checkTools(value: unknown): Tool[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalid(`tools must be an array of {name, description?, inputSchema?, outputSchema?}, got ${show(value)}`);
  const seen = new Set<string>();
  return value.map((tool, index) => {
    if (typeof tool !== 'object' || tool === null || Array.isArray(tool)) throw invalid(`tools[${index}] must be an object, got ${show(tool)}`);
    const { name, description, inputSchema, outputSchema } = tool as Record<string, unknown>;
    if (typeof name !== 'string' || name === '') throw invalid(`tools[${index}].name must be a non-empty string, got ${show(name)}`);
    if (seen.has(name)) throw invalid(`tools[${index}].name "${name}" is listed twice`);
    seen.add(name);
    if (description !== undefined && typeof description !== 'string') throw invalid(`tools[${index}].description must be a string, got ${show(description)}`);
    for (const [field, schema] of [['inputSchema', inputSchema], ['outputSchema', outputSchema]] as const) {
      if (schema !== undefined && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) throw invalid(`tools[${index}].${field} must be a JSON Schema object, got ${show(schema)}`);
    }
    return { name, ...(description !== undefined ? { description } : {}), ...(inputSchema !== undefined ? { inputSchema: inputSchema as Record<string, unknown> } : {}), ...(outputSchema !== undefined ? { outputSchema: outputSchema as Record<string, unknown> } : {}) };
  });
}

/**
 * The bindings object for a tool list. Each tool is called by the identifier path `declarations`
 * gives it (bindingPaths), so a name that is not an identifier, `github.list-issues`, is
 * `github.list_issues` in the program, exactly as its declaration says; `invoke` names the original.
 */
export function toolBindings(tools: Tool[], call: CallTool, discovery = false): Bindings {
  let paths: string[][];
  try {
    // With discovery a top-level `search` is `search_`, as the declarations say.
    paths = bindingPaths(tools.map((tool) => tool.name), { discovery });
  } catch (error) {
    throw invalid((error as Error).message);
  }
  // Null prototypes, so a tool named "constructor" is a plain member.
  const root = Object.create(null) as Bindings;
  tools.forEach(({ name }, index) => {
    const path = paths[index]!;
    let node = root;
    for (const part of path.slice(0, -1)) node = (node[part] ??= Object.create(null) as Bindings) as Bindings;
    node[path.at(-1)!] = ((...args: unknown[]) => call(name, args)) as BindingFunction;
  });
  return root;
}
