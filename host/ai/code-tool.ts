// `codeTool()`: code mode for AI SDK agents. One AI SDK tool whose input is a program; ptc runs it
// under its sandbox with the given ToolSet's `execute` functions as the program's bindings, and
// the model reads the program's output and value (or its failure) as the tool's result. The
// description is ptc's execution guidance plus the tools' declarations, made from their schemas
// by the same code as `declarations()`.
import { asSchema, jsonSchema, tool, type ModelMessage, type Tool, type ToolApprovalStatus, type ToolExecutionOptions, type ToolSet } from 'ai';
import { bindingPaths, createRuntime, declarations, toolCatalog, type Bindings, type BindingFunction, type RunHandle, type Runtime, type RuntimeConfig, type ToolSchema } from '../index.ts';
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
  /**
   * Characters the tools' declarations may take in the description; past it, the description
   * lists namespaces and programs find tools with search() and describe() (discovery, which is
   * then on unless `discovery: false`). @default 40000, as `ptc mcp`
   */
  descriptionBudget?: number;
  /** Tools whose calls need a person's approval, besides those whose own `needsApproval` says so. */
  approvalRequired?: readonly string[];
  /**
   * A call answers after this many ms with `status: "running"`, the output so far and a runId when
   * the program has not ended; it keeps running, and `waitTool` looks again. @default none: a call waits for the end
   */
  yieldAfterMs?: number;
}

/** The wait tool's input: the runId a yielded call answered, how long to wait, or cancel. */
export interface WaitInput {
  runId: string;
  timeoutMs?: number;
  cancel?: boolean;
}

/** The AI SDK tool, and the runtime it runs in: `dispose()` ends the runtime when codeTool made it. */
export type CodeTool = Tool<{ program: string }, CodeToolOutput> & {
  readonly runtime: Runtime;
  dispose(): Promise<void>;
  /**
   * For generateText/streamText's `toolApproval` (`{ code: code.toolApproval }`): a program that
   * names a tool needing approval asks the user first, with the AI SDK's own approval request.
   */
  readonly toolApproval: (input: { program: string }) => ToolApprovalStatus;
  /** The companion tool for programs left running (with `yieldAfterMs`): give it to the model beside the code tool. */
  readonly waitTool: Tool<WaitInput, CodeToolOutput>;
};

const WAIT_INPUT = jsonSchema<WaitInput>({
  type: 'object',
  properties: {
    runId: { type: 'string', description: 'The runId the code tool answered.' },
    timeoutMs: { type: 'integer', minimum: 0, description: 'Answer after this many ms if the program is still running; omit it to wait for the end.' },
    cancel: { type: 'boolean', description: 'Stop the program now.' },
  },
  required: ['runId'],
  additionalProperties: false,
});

/** About 10k tokens, as `ptc mcp`'s default: past it, searching beats reading every declaration. */
const DESCRIPTION_BUDGET = 40_000;

const INPUT = jsonSchema<{ program: string }>({
  type: 'object',
  properties: { program: { type: 'string', description: 'The TypeScript program to run, as the description says.' } },
  required: ['program'],
  additionalProperties: false,
});

/** Makes the code tool over `options.tools`; throws when a tool's schema cannot be declared. */
export function codeTool(options: CodeToolOptions): CodeTool {
  const { tools, runtime: given, stateOwner, description: preface, approvalRequired = [], descriptionBudget = DESCRIPTION_BUDGET, yieldAfterMs, ...config } = options;
  if (yieldAfterMs !== undefined && (!Number.isSafeInteger(yieldAfterMs) || yieldAfterMs < 0)) throw new TypeError(`codeTool: yieldAfterMs must be a non-negative integer of ms, got ${String(yieldAfterMs)}`);
  // The runs a call left running, for the wait tool, until a look returns their result.
  const running = new Map<string, RunHandle>();
  if (!Number.isSafeInteger(descriptionBudget) || descriptionBudget < 0) throw new TypeError(`codeTool: descriptionBudget must be a non-negative integer, got ${String(descriptionBudget)}`);
  if (tools === null || typeof tools !== 'object') throw new TypeError(`codeTool: tools must be an AI SDK ToolSet (an object of tools), got ${tools === null ? 'null' : typeof tools}`);
  if (given !== undefined && Object.keys(config).length > 0) {
    throw new TypeError(`codeTool: pass either runtime or runtime options, not both (got runtime and ${Object.keys(config).join(', ')})`);
  }
  const callable = Object.entries(tools).filter(([, t]) => typeof t?.execute === 'function');
  const skipped = Object.keys(tools).filter((name) => !callable.some(([other]) => other === name));
  const schemas: ToolSchema[] = callable.map(([name, t]) => toolSchema(name, t));
  const full = declarations(schemas);
  // Discovery: asked for, or (unless refused) the tool set's declarations do not fit the budget.
  const discovery = given !== undefined ? given.config.discovery : (config.discovery ?? full.length > descriptionBudget);
  const catalog = discovery ? toolCatalog(schemas) : undefined;
  const paths = catalog ? catalog.paths.map((path) => [...path]) : bindingPaths(schemas.map((s) => s.name));
  for (const name of approvalRequired) {
    if (!Object.hasOwn(tools, name)) throw new TypeError(`codeTool: approvalRequired names ${JSON.stringify(name)}, which is not one of the tools (${Object.keys(tools).join(', ')})`);
  }
  // Each tool that needs approval, by the identifier a program calls it with.
  const gated = new Map<string, string>();
  callable.forEach(([name, t], index) => {
    if (approvalRequired.includes(name) || (t.needsApproval !== undefined && t.needsApproval !== false)) gated.set(name, paths[index]!.join('.'));
  });
  const runtime = given ?? createRuntime({ ...config, discovery });
  const text = catalog ? catalog.declarations({ budget: descriptionBudget }) : full;
  const description = [
    ...(preface ? [preface, ''] : []),
    'Run a TypeScript program that calls the tools below.',
    runtime.executionInstructions,
    'Each tool takes one argument object and resolves with its result.',
    ...(yieldAfterMs !== undefined ? [`A program still running after ${yieldAfterMs} ms keeps running: the answer says so with its runId, and the wait tool returns the rest.`] : []),
    ...(skipped.length ? [`These tools have no execute function, so programs cannot call them: ${skipped.map((name) => JSON.stringify(name)).join(', ')}.`] : []),
    '',
    '```ts',
    text.trimEnd(),
    '```',
  ].join('\n');

  const t = (name: string): Tool => tools[name] as Tool;
  const made = tool({
    description,
    inputSchema: INPUT,
    execute: async ({ program }, call) => {
      if (typeof program !== 'string') throw new TypeError(`the code tool's input needs program as a string, got ${typeof program}`);
      // Inner tools still running when the run ends (a timeout, the program returned) are told to stop.
      const inner = new AbortController();
      const signal = call.abortSignal ? AbortSignal.any([call.abortSignal, inner.signal]) : inner.signal;
      const end = (): void => inner.abort(new Error('the program that called this tool has ended'));
      let kept = false;
      try {
        const approved = approvedByUser(call.messages, call.toolCallId);
        const needs: ApprovalNeed = (name) => {
          if (approved || !gated.has(name)) return false;
          const own = t(name).needsApproval;
          // A tool's own needsApproval function decides per input; a listed tool or `true` always asks.
          return approvalRequired.includes(name) || typeof own !== 'function' ? true : (own as Exclude<ReturnType<ApprovalNeed>, boolean | undefined>);
        };
        const bindings = bindingsFor(callable, paths, call, signal, needs);
        const owner = typeof stateOwner === 'function' ? stateOwner(call as ToolExecutionOptions<unknown>) : stateOwner;
        const spec = runtime.resolve({ program, bindings, ...(catalog ? { tools: catalog } : {}), ...(owner !== undefined ? { stateOwner: owner } : {}) });
        const options = call.abortSignal ? { signal: call.abortSignal } : {};
        const result = yieldAfterMs === undefined ? await runtime.run(spec, options) : await runtime.run(spec, { ...options, yieldAfterMs });
        // An aborted generation ends this call as it ends any tool's: with the abort's reason.
        if (call.abortSignal?.aborted) throw call.abortSignal.reason;
        if (result.status === 'running') {
          // Its inner tool calls stay live until the program ends.
          kept = true;
          running.set(result.runId, result.handle);
          void result.handle.result.then(end, end);
        }
        return await toolOutput(result);
      } finally {
        if (!kept) end();
      }
    },
    toModelOutput: ({ output }) => modelOutput(output),
  });
  const waitTool = tool({
    description: 'Look again at a program the code tool left running (it answered status "running" with a runId): returns the output printed since the last look, and once the program has ended, its result. With cancel: true, stops it instead and returns how it ended.',
    inputSchema: WAIT_INPUT,
    execute: async ({ runId, timeoutMs, cancel }) => {
      const handle = running.get(runId);
      if (handle === undefined) throw new Error(`wait: no program left running has runId ${JSON.stringify(runId)} (a run is forgotten once a look returned its result)`);
      if (cancel === true) await handle.cancel('cancelled by the wait tool');
      const look = await handle.wait(cancel === true ? 0 : timeoutMs);
      if (look.status !== 'running') running.delete(runId);
      return toolOutput(look);
    },
    toModelOutput: ({ output }) => modelOutput(output),
  });
  return Object.assign(made, {
    runtime,
    waitTool,
    toolApproval: ({ program }: { program: string }): ToolApprovalStatus => {
      const named = [...gated].filter(([, identifier]) => mentions(String(program), identifier)).map(([name]) => name);
      return named.length ? { type: 'user-approval', reason: `the program calls ${named.join(', ')}, which ${named.length > 1 ? 'need' : 'needs'} approval` } : 'not-applicable';
    },
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

/** Whether the program's text names `identifier` (a binding path) where a call could start. */
function mentions(program: string, identifier: string): boolean {
  const escaped = identifier.replace(/[$.]/g, (c) => `\\${c}`);
  return new RegExp(`(?<![\\w$.])${escaped}(?![\\w$])`).test(program);
}

/** Whether the messages hold the user's approval of this tool call (the AI SDK puts the request and the response there). */
function approvedByUser(messages: readonly ModelMessage[] | undefined, toolCallId: string): boolean {
  const requests = new Set<string>();
  const approvals = new Set<string>();
  for (const message of messages ?? []) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as Array<{ type: string; approvalId?: string; toolCallId?: string; approved?: boolean }>) {
      if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId && part.approvalId) requests.add(part.approvalId);
      if (part.type === 'tool-approval-response' && part.approved === true && part.approvalId) approvals.add(part.approvalId);
    }
  }
  return [...requests].some((id) => approvals.has(id));
}

/** When a tool call needs approval that the code call did not get: true, or the tool's own needsApproval to ask with the input. */
type ApprovalNeed = (name: string) => boolean | ((input: unknown, options: unknown) => boolean | PromiseLike<boolean>) | undefined;

const NOT_APPROVED = (name: string): Error =>
  Object.assign(
    new Error(
      `${name} needs a person's approval, which this call of the code tool did not get: the application asks before a program that names ${name} runs, when it passes toolApproval: { <code tool>: code.toolApproval } to generateText or streamText`,
    ),
    { code: 'PTC_REJECTED' },
  );

/** The program's bindings: each tool's execute, its input validated by its schema, with the code tool's call options. */
function bindingsFor(callable: Array<[string, Tool]>, paths: string[][], call: ToolExecutionOptions<unknown>, signal: AbortSignal, needs: ApprovalNeed): Bindings {
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
      const need = needs(name);
      if (need === true || (typeof need === 'function' && (await need(input, { toolCallId: options.toolCallId, messages: call.messages, context: call.context })))) throw NOT_APPROVED(name);
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
