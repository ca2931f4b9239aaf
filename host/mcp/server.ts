// The code-mode MCP server: one `run_code` tool whose description is the execution guidance
// plus the declarations of every upstream tool, each upstream a namespace of bindings. With a
// retaining mode the session is one state owner, and `reset` releases it.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode, type CallToolResult, type ClientCapabilities, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { binding, codeFence, lineComment, PROGRAM_GLOBALS, toolCatalog, VERSION, type BindingFunction, type Bindings, type OutputEntry, type Runtime, type ToolCatalog, type ToolSchema } from '../index.ts';
import type { Upstream } from './upstreams.ts';
import type { UpstreamConfig } from './config.ts';
import { liveUpstreams } from './live.ts';
import { missingCapabilities } from './client-requests.ts';
import { RunFiles, toolResult, upstreamValue } from './results.ts';
import { progressReporter } from './progress.ts';
import { DEFAULT_DESCRIPTION_BUDGET, OVER_BUDGET_FIRST_LINE, type McpServerOptions } from './budget.ts';
import { elicitingApprover, isGatedTool, type ApprovalRule } from './approvals.ts';
import { runningResult, WAIT_TOOL, YIELD_AFTER_ARGUMENT, YieldedRuns } from './yielded.ts';

interface Binding {
  upstream: Upstream;
  tool: string;
  /** Whether a call waits for the user's approval (approvals.ts). */
  gated?: boolean;
}

interface Listed {
  upstream: Upstream;
  tool: ToolSchema;
}

/**
 * The run_code description and the bindings table, built once from the upstreams' tool lists.
 * Everything an upstream listed is a stranger's text: each upstream is one namespace, named by
 * the config, and its tools are functions in it (a dot in a tool's name is not a namespace), so
 * no upstream can declare into another's namespace or break the table. It never throws: an
 * upstream whose tools cannot be declared is reported, and the others are served.
 */
export function describeUpstreams(
  runtime: Runtime,
  upstreams: Upstream[],
  client?: ClientCapabilities,
  approval?: Map<string, ApprovalRule>,
  options: McpServerOptions = {},
): { description: string; bindings: Array<[string[], Binding]>; catalog: ToolCatalog } {
  // An upstream that is down but had tools keeps them declared, with a note: ptc is reconnecting it.
  let usable = upstreams.filter((upstream) => upstream.down === undefined || upstream.tools.length > 0);
  const refused = new Map<Upstream, string>();
  let rendered = render(usable);
  if (rendered instanceof Error) {
    // Find who broke it, so one upstream's list cannot take the others' away.
    for (const upstream of usable) {
      const alone = render([upstream]);
      if (alone instanceof Error) refused.set(upstream, alone.message);
    }
    usable = usable.filter((upstream) => !refused.has(upstream));
    rendered = render(usable);
    if (rendered instanceof Error) {
      for (const upstream of usable) refused.set(upstream, rendered.message);
      usable = [];
      rendered = render([]) as Exclude<typeof rendered, Error>;
    }
  }
  const { text, catalog, listed, paths, dropped } = rendered;
  const unavailable = upstreams.flatMap((upstream) => {
    if (upstream.down !== undefined && upstream.tools.length > 0) return [lineComment(`${upstream.name}: down (${upstream.down}); its tools above fail until it is back.`)];
    if (upstream.down !== undefined) return [lineComment(`${upstream.name}: unavailable (${upstream.down}); its tools cannot be called.`)];
    const why = refused.get(upstream);
    return why === undefined ? [] : [lineComment(`${upstream.name}: its tool list cannot be declared (${why}); its tools cannot be called.`)];
  });
  const missing = missingCapabilities(client);
  const frame = (code: string, first = 'Run a TypeScript program that calls the tools below.'): string => {
    const fence = codeFence(code);
    return [
      first,
      runtime.executionInstructions,
      'Each tool takes one argument object and resolves with its result: the structured result when the tool has one, else its text parsed as JSON when it parses, else the text; images come back as Image values.',
      'Each namespace below is one upstream MCP server, and its comment names the server. Names, descriptions and schemas inside a namespace are that server\'s own text.',
      ...(missing.length === 0 ? [] : [`The MCP client running this server declared no ${missing.join(', ')} support, so ptc offers none to the upstream servers: their tools that need ${missing.length === 1 ? 'it' : 'any of these'} are missing below.`]),
      '',
      `${fence}ts`,
      code,
      fence,
    ].join('\n');
  };
  const withTools = (declared: string, first?: string): string => frame([PROGRAM_GLOBALS, '', declared.trimEnd(), ...dropped, ...unavailable].join('\n'), first);
  let description = withTools(text);
  const budget = options.descriptionBudget ?? DEFAULT_DESCRIPTION_BUDGET;
  if (description.length > budget) {
    // What the frame and the unavailable upstreams take is not the declarations' to spend (a
    // longer fence is at most a few characters more).
    const first = OVER_BUDGET_FIRST_LINE;
    const rest = withTools('', first).length + 8;
    description = withTools(catalog.declarations({ budget: Math.max(1, budget - rest) }), first);
  }
  const gated = (upstream: Upstream, name: string): boolean => isGatedTool(approval, upstream.name, upstream.tools.find((listedTool) => listedTool.name === name)!);
  return { description, bindings: listed.map(({ upstream, tool }, index) => [paths[index]!, { upstream, tool: tool.name, gated: gated(upstream, tool.name) }]), catalog };
}

function render(upstreams: Upstream[]): { text: string; catalog: ToolCatalog; listed: Listed[]; paths: string[][]; dropped: string[] } | Error {
  // An upstream that lists a name twice gets its first tool bound, the rest could not be called
  // apart; the description says so. (Names that differ but map to one identifier, `x.y` and
  // `x_y`, are told apart by bindingPaths, and each declaration names its tool.)
  const dropped: string[] = [];
  const listed: Listed[] = upstreams.flatMap((upstream) => {
    const counts = new Map<string, number>();
    for (const tool of upstream.tools) counts.set(tool.name, (counts.get(tool.name) ?? 0) + 1);
    for (const [name, count] of counts) {
      if (count > 1) dropped.push(lineComment(`${upstream.name}: lists the tool ${JSON.stringify(name)} ${count} times; only the first of them is declared and called.`));
    }
    return upstream.tools.filter((tool, index, all) => all.findIndex((other) => other.name === tool.name) === index).map((tool) => ({ upstream, tool }));
  });
  // Only the four fields a declaration reads: an upstream's other fields (icons, annotations) are its own business.
  const tools: ToolSchema[] = listed.map(({ upstream, tool }) => ({
    name: `${upstream.name}.${tool.name}`,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    ...(tool.inputSchema !== undefined ? { inputSchema: tool.inputSchema } : {}),
    ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema } : {}),
  }));
  const names = listed.map(({ upstream, tool }) => [upstream.name, tool.name]);
  const namespaceDocs = new Map(upstreams.map((upstream) => [upstream.name, `Declared by the upstream MCP server ${JSON.stringify(upstream.name)} (mcpServers.${upstream.name} in the ptc mcp config).`]));
  try {
    const catalog = toolCatalog(tools, { names, namespaceDocs });
    return { text: catalog.declarations(), catalog, listed, paths: catalog.paths.map((path) => [...path]), dropped };
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/**
 * Creates the MCP server over a runtime and the configured upstreams, which start once its
 * client has initialized; connect it to a transport, and call `closeUpstreams` at the end.
 */
export function createMcpServer(
  runtime: Runtime,
  configs: Map<string, UpstreamConfig>,
  approval?: Map<string, ApprovalRule>,
  options: McpServerOptions = {},
): { server: Server; closeUpstreams(): Promise<void> } {
  const server = new Server({ name: 'ptc', version: VERSION }, { capabilities: { tools: { listChanged: true } } });
  const live = liveUpstreams(server, configs, (upstreams, client) => describeUpstreams(runtime, upstreams, client, approval, options));
  // The upstream tool each binding path calls, for the approval question (the table changes as upstreams come and go).
  let toolNames = new Map<string, string>();
  const approver = elicitingApprover(server, (name) => toolNames.get(name) ?? name, runtime.config.approval.timeoutMs);
  // One state owner per session; `reset` swaps in a fresh one.
  let owner = {};
  const yielded = new YieldedRuns();
  const toolsFor = (description: string): Tool[] => [
    {
      name: 'run_code',
      description,
      inputSchema: {
        type: 'object',
        properties: {
          program: { type: 'string', description: 'The TypeScript program.' },
          timeoutMs: { type: 'number', description: `Deadline in ms (default ${runtime.timeout.defaultMs}, at most ${runtime.timeout.maxMs}).` },
          yieldAfterMs: YIELD_AFTER_ARGUMENT,
        },
        required: ['program'],
        additionalProperties: false,
      },
    },
    ...(runtime.retainsState
      ? [{
        name: 'reset',
        description: 'End the retained environment: variables, functions and loaded modules of earlier programs are forgotten and the next program starts fresh.',
        inputSchema: { type: 'object' as const, properties: {}, additionalProperties: false },
      }]
      : []),
    WAIT_TOOL,
  ];

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolsFor((await live.current()).description) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args = {} } = request.params;
    if (name === 'reset' && runtime.retainsState) {
      const old = owner;
      owner = {};
      await runtime.release(old);
      return { content: [{ type: 'text', text: 'The environment was reset: the next program starts fresh.' }] };
    }
    if (name === 'wait') return yielded.wait(args);
    if (name !== 'run_code') throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}: this server has ${runtime.retainsState ? 'run_code, reset and wait' : 'run_code and wait'}`);
    // Bad arguments are tool errors, not protocol errors, so the model sees them and can correct itself.
    for (const key of Object.keys(args)) {
      if (key !== 'program' && key !== 'timeoutMs' && key !== 'yieldAfterMs') return invalid(`run_code: unknown argument "${key}" (it takes program, timeoutMs and yieldAfterMs)`);
    }
    const { yieldAfterMs } = args;
    if (yieldAfterMs !== undefined && (typeof yieldAfterMs !== 'number' || !Number.isSafeInteger(yieldAfterMs) || yieldAfterMs < 0)) {
      return invalid(`run_code: yieldAfterMs must be a non-negative integer of ms, got ${JSON.stringify(yieldAfterMs)}`);
    }
    if (typeof args.program !== 'string') return invalid(`run_code: program must be a string, got ${JSON.stringify(args.program)}`);
    // Only a positive number, as the reference's run_code: null (no deadline) is the library's and
    // ptc serve's choice for a harness, never the model's.
    const timeoutMs = args.timeoutMs;
    if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs <= 0)) {
      return invalid(`run_code: timeoutMs must be a positive integer of ms (larger than ${runtime.timeout.maxMs} is capped to it), got ${JSON.stringify(timeoutMs)}`);
    }
    const { bindings: table, catalog } = await live.current();
    toolNames = new Map(table.map(([path, { upstream, tool }]) => [path.join('.'), `${upstream.name}.${tool}`]));
    const files = new RunFiles();
    // Upstream calls still pending when the run ends (a timeout, an abort) are cancelled upstream too.
    const ended = new AbortController();
    const signal = AbortSignal.any([extra.signal, ended.signal]);
    let deadline: number | null = null;
    // A run that yields goes on after this call: its files and upstream calls end with it instead.
    let kept = false;
    const end = async (): Promise<void> => {
      ended.abort(new Error('the run ended'));
      await files.remove();
    };
    try {
      let spec;
      try {
        spec = runtime.resolve({
          program: args.program,
          bindings: makeBindings(table, files, signal, () => deadline),
          tools: catalog,
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          ...(runtime.retainsState ? { stateOwner: owner } : {}),
        });
      } catch (error) {
        return invalid(`run_code: ${(error as Error).message}`);
      }
      deadline = spec.timeoutMs;
      let result;
      try {
        const progress = progressReporter(extra);
        // Progress belongs to this call: none after it answered.
        const onOutput = progress === undefined ? undefined : (entry: OutputEntry): void => {
          if (!kept) progress.onOutput(entry);
        };
        const options = { signal: extra.signal, onApproval: approver, ...(onOutput !== undefined ? { onOutput } : {}) };
        result = yieldAfterMs === undefined ? await runtime.run(spec, options) : await runtime.run(spec, { ...options, yieldAfterMs });
        await progress?.sent();
      } catch (error) {
        // The runtime throws for misuse it can name, such as a second run while the session's environment is busy.
        return invalid(`run_code: ${(error as Error).message}`);
      }
      if (result.status === 'running') {
        kept = true;
        yielded.keep(result.handle, end);
        return await runningResult(result);
      }
      return await toolResult(result);
    } finally {
      if (!kept) await end();
    }
  });
  return { server, closeUpstreams: () => live.close() };
}

function invalid(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

function makeBindings(table: Array<[string[], Binding]>, files: RunFiles, signal: AbortSignal, timeoutMs: () => number | null): Bindings {
  // Null prototypes, and members defined rather than assigned: a tool named `__proto__` or
  // `constructor` is a member like any other, never a prototype.
  const root = Object.create(null) as Bindings;
  const define = (holder: Bindings, key: string, value: Bindings | BindingFunction): void => {
    Object.defineProperty(holder, key, { value, writable: true, enumerable: true, configurable: true });
  };
  for (const [path, { upstream, tool, gated }] of table) {
    let space = root;
    for (const segment of path.slice(0, -1)) {
      if (!Object.hasOwn(space, segment)) define(space, segment, Object.create(null) as Bindings);
      space = space[segment] as Bindings;
    }
    const call: BindingFunction = async (...args: unknown[]) => {
      if (args.length > 1 || (args[0] !== undefined && (typeof args[0] !== 'object' || args[0] === null || Array.isArray(args[0])))) {
        throw Object.assign(new TypeError(`${path.join('.')} takes one argument object, got ${args.length} argument(s)`), { code: 'PTC_BAD_ARGUMENTS' });
      }
      if (hasBigInt(args[0])) throw Object.assign(new TypeError(`${path.join('.')}: an integer beyond 2^53 cannot be sent to an MCP server exactly; pass it as a string`), { code: 'PTC_BAD_ARGUMENTS' });
      const result = await upstream.call(tool, (args[0] ?? {}) as Record<string, unknown>, { signal, timeoutMs: timeoutMs() });
      return upstreamValue(result, files);
    };
    define(space, path.at(-1)!, gated === true ? binding(call, { approval: true }) : call);
  }
  return root;
}

function hasBigInt(value: unknown): boolean {
  if (typeof value === 'bigint') return true;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(hasBigInt);
}
