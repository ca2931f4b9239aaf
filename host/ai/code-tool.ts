// `codeTool()`: code mode for AI SDK agents. One AI SDK tool whose input is a program; ptc runs it
// under its sandbox with the given ToolSet's `execute` functions as the program's bindings, and
// the model reads the program's output and value (or its failure) as the tool's result. The
// description is ptc's execution guidance plus the tools' declarations, made from their schemas
// by the same code as `declarations()`.
import { asSchema, jsonSchema, tool, type Tool, type ToolExecutionOptions, type ToolSet } from 'ai';
import { bindingPaths, createRuntime, declarations, type Bindings, type BindingFunction, type Runtime, type RuntimeConfig, type ToolSchema } from '../index.ts';
import { modelOutput, toolOutput, type CodeToolOutput } from './output.ts';

export type { CodeToolOutput } from './output.ts';

/** The state owner of a call: one object per conversation keeps its variables between calls (retained modes). */
export type StateOwnerOption = object | ((call: ToolExecutionOptions<unknown>) => object | undefined);

export interface CodeToolOptions extends RuntimeConfig {
  /** The tools a program can call: each tool's `execute` becomes a binding of its name. */
  tools: ToolSet;
  /** A runtime to run in (shared by several tools), instead of one made from the other options. */
  runtime?: Runtime;
  /** Retained modes: the owner whose environment a call runs in (or a function of the call naming it). */
  stateOwner?: StateOwnerOption;
  /** Text put before ptc's own guidance in the description. */
  description?: string;
}

/** The AI SDK tool, and the runtime it runs in: `dispose()` ends the runtime when codeTool made it. */
export type CodeTool = Tool<{ program: string }, CodeToolOutput> & { readonly runtime: Runtime; dispose(): Promise<void> };

const INPUT = jsonSchema<{ program: string }>({
  type: 'object',
  properties: { program: { type: 'string', description: 'The TypeScript program to run, as the description says.' } },
  required: ['program'],
  additionalProperties: false,
});

/** Makes the code tool over `options.tools`; throws when a tool's schema cannot be declared. */
export function codeTool(options: CodeToolOptions): CodeTool {
  const { tools, runtime: given, stateOwner, description: preface, ...config } = options;
  if (tools === null || typeof tools !== 'object') throw new TypeError(`codeTool: tools must be an AI SDK ToolSet (an object of tools), got ${tools === null ? 'null' : typeof tools}`);
  if (given !== undefined && Object.keys(config).length > 0) {
    throw new TypeError(`codeTool: pass either runtime or runtime options, not both (got runtime and ${Object.keys(config).join(', ')})`);
  }
  const callable = Object.entries(tools).filter(([, t]) => typeof t?.execute === 'function');
  const skipped = Object.keys(tools).filter((name) => !callable.some(([other]) => other === name));
  const schemas: ToolSchema[] = callable.map(([name, t]) => toolSchema(name, t));
  const paths = bindingPaths(schemas.map((s) => s.name));
  const runtime = given ?? createRuntime(config);
  const text = declarations(schemas);
  const description = [
    ...(preface ? [preface, ''] : []),
    'Run a TypeScript program that calls the tools below.',
    runtime.executionInstructions,
    'Each tool takes one argument object and resolves with its result.',
    ...(skipped.length ? [`These tools have no execute function, so programs cannot call them: ${skipped.map((name) => JSON.stringify(name)).join(', ')}.`] : []),
    '',
    '```ts',
    text.trimEnd(),
    '```',
  ].join('\n');

  const made = tool({
    description,
    inputSchema: INPUT,
    execute: async ({ program }, call) => {
      if (typeof program !== 'string') throw new TypeError(`the code tool's input needs program as a string, got ${typeof program}`);
      // Inner tools still running when the run ends (a timeout, the program returned) are told to stop.
      const inner = new AbortController();
      const signal = call.abortSignal ? AbortSignal.any([call.abortSignal, inner.signal]) : inner.signal;
      try {
        const bindings = bindingsFor(callable, paths, call, signal);
        const owner = typeof stateOwner === 'function' ? stateOwner(call as ToolExecutionOptions<unknown>) : stateOwner;
        const spec = runtime.resolve({ program, bindings, ...(owner !== undefined ? { stateOwner: owner } : {}) });
        const result = await runtime.run(spec, call.abortSignal ? { signal: call.abortSignal } : {});
        // An aborted generation ends this call as it ends any tool's: with the abort's reason.
        if (call.abortSignal?.aborted) throw call.abortSignal.reason;
        return await toolOutput(result);
      } finally {
        inner.abort(new Error('the program that called this tool has ended'));
      }
    },
    toModelOutput: ({ output }) => modelOutput(output),
  });
  return Object.assign(made, {
    runtime,
    dispose: async () => {
      if (given === undefined) await runtime.dispose();
    },
  }) as CodeTool;
}

/** A tool's name, description and JSON Schemas, for its declaration. */
function toolSchema(name: string, t: Tool): ToolSchema {
  const input = resolvedJsonSchema(name, 'inputSchema', t.inputSchema);
  const output = t.outputSchema === undefined ? undefined : resolvedJsonSchema(name, 'outputSchema', t.outputSchema);
  const description = typeof t.description === 'string' ? t.description : undefined;
  return { name, ...(description ? { description } : {}), ...(input !== undefined ? { inputSchema: input } : {}), ...(output !== undefined ? { outputSchema: output } : {}) };
}

function resolvedJsonSchema(name: string, field: string, schema: unknown): unknown {
  if (schema === undefined) return undefined;
  const json = asSchema(schema as Parameters<typeof asSchema>[0]).jsonSchema;
  if (json !== null && typeof json === 'object' && typeof (json as PromiseLike<unknown>).then === 'function') {
    throw new TypeError(`codeTool: the ${field} of tool ${JSON.stringify(name)} gives its JSON Schema only asynchronously; pass a schema whose JSON Schema is known at once (zod, jsonSchema({...}))`);
  }
  return json;
}

/** The program's bindings: each tool's execute, its input validated by its schema, with the code tool's call options. */
function bindingsFor(callable: Array<[string, Tool]>, paths: string[][], call: ToolExecutionOptions<unknown>, signal: AbortSignal): Bindings {
  const root: Bindings = Object.create(null);
  let calls = 0;
  callable.forEach(([name, t], index) => {
    const schema = asSchema(t.inputSchema as Parameters<typeof asSchema>[0]);
    const binding: BindingFunction = async (...args: unknown[]) => {
      if (args.length > 1) throw Object.assign(new Error(`${name} takes one argument object, got ${args.length} arguments`), { code: 'INVALID_INPUT' });
      let input = args[0];
      if (schema.validate) {
        const checked = await schema.validate(input);
        if (!checked.success) throw Object.assign(new Error(`invalid input for ${name}: ${validationMessage(checked.error)}`), { code: 'INVALID_INPUT' });
        input = checked.value;
      }
      const options = { ...call, toolCallId: `${call.toolCallId}.${++calls}`, abortSignal: signal };
      const result = await (t.execute as (input: unknown, options: unknown) => unknown)(input, options);
      return isAsyncIterable(result) ? await lastOf(result) : result;
    };
    let at = root;
    const path = paths[index]!;
    for (const part of path.slice(0, -1)) at = (at[part] ??= Object.create(null)) as Bindings;
    at[path.at(-1)!] = binding;
  });
  return root;
}

/** A schema's complaint in one line: zod and Standard Schema list issues (path and message); others have a message. */
function validationMessage(error: Error): string {
  const issues = (error as { issues?: unknown }).issues ?? (error.cause as { issues?: unknown } | undefined)?.issues;
  if (!Array.isArray(issues) || issues.length === 0) return error.message;
  return issues
    .map((issue: { path?: unknown[]; message?: unknown }) => {
      const path = Array.isArray(issue.path) && issue.path.length ? `${issue.path.map((key) => (typeof key === 'object' && key !== null && 'key' in key ? String(key.key) : String(key))).join('.')}: ` : '';
      return `${path}${String(issue.message)}`;
    })
    .join('; ');
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}

/** A streaming tool's result is its last value, as the AI SDK takes it. */
async function lastOf(values: AsyncIterable<unknown>): Promise<unknown> {
  let last: unknown;
  for await (const value of values) last = value;
  return last;
}
