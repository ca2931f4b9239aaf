// The code-mode MCP server: one `run_code` tool whose description is the execution guidance
// plus the declarations of every upstream tool, each upstream a namespace of bindings. With a
// retaining mode the session is one state owner, and `reset` releases it.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { binding, bindingPaths, codeFence, lineComment, PROGRAM_GLOBALS, toolCatalog, VERSION, type BindingFunction, type Bindings, type OutputEntry, type Runtime, type ToolCatalog, type ToolSchema } from '../index.ts';
import { UpstreamError, type Upstream } from './upstreams.ts';
import { realpathSync } from 'node:fs';
import { parse } from 'node:path';
import type { UpstreamConfig } from './config.ts';
import { liveUpstreams } from './live.ts';
import { passThrough } from './passthrough.ts';
import { RunFiles, toolResult, upstreamValue } from './results.ts';
import { progressReporter } from './progress.ts';
import { DEFAULT_DESCRIPTION_BUDGET, OVER_BUDGET_FIRST_LINE, type McpServerOptions } from './budget.ts';
import { elicitingApprover, isGatedTool, type ApprovalRule } from './approvals.ts';
import { runningResult, WAIT_TOOL, YIELD_AFTER_ARGUMENT, YieldedRuns } from './yielded.ts';

interface Binding {
  upstream: Upstream;
  /** The upstream's tool; undefined for the placeholder member that keeps a down upstream's namespace. */
  tool: string | undefined;
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
  approval?: Map<string, ApprovalRule>,
  options: McpServerOptions = {},
): { description: string; bindings: Array<[string[], Binding]>; catalog: ToolCatalog; downNamespaces: Map<string, Upstream> } {
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
    if (upstream.down !== undefined) return [lineComment(`${upstream.name}: unavailable (${upstream.down}); a call into its namespace fails with a BindingError (code UPSTREAM_DOWN) until it is up.`)];
    const why = refused.get(upstream);
    return why === undefined ? [] : [lineComment(`${upstream.name}: its tool list cannot be declared (${why}); its tools cannot be called.`)];
  });
  const frame = (code: string, first = 'Run a TypeScript program that calls the tools below.'): string => {
    const fence = codeFence(code);
    return [
      first,
      runtime.executionInstructions,
      'Each tool takes one argument object and resolves with its result: the structured result when the tool has one, else its text parsed as JSON when it parses, else the text; images come back as Image values.',
      'Each namespace below is one upstream MCP server, and its comment names the server. Names, descriptions and schemas inside a namespace are that server\'s own text.',
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
  // An upstream that is down with no tools listed still has its namespace, by the name its tools
  // would have had: a program that calls into it gets a BindingError saying why (makeBindings).
  const taken = new Set(paths.map((path) => path[0]));
  const downNamespaces = new Map<string, Upstream>();
  for (const upstream of upstreams) {
    if (upstream.down === undefined || upstream.tools.length > 0 || refused.has(upstream)) continue;
    const namespace = bindingPaths([[upstream.name, 'x']], { discovery: true })[0]![0]!;
    if (taken.has(namespace)) continue;
    taken.add(namespace);
    downNamespaces.set(namespace, upstream);
  }
  return { description, bindings: listed.map(({ upstream, tool }, index) => [paths[index]!, { upstream, tool: tool.name, gated: gated(upstream, tool.name) }]), catalog, downNamespaces };
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
  const server = new Server({ name: 'ptc', version: VERSION }, { capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } } });
  const live = liveUpstreams(server, configs, (upstreams) => describeUpstreams(runtime, upstreams, approval, options));
  passThrough(server, () => live.upstreams());
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
          timeoutMs: { type: 'integer', minimum: 1, description: `Deadline in ms (default ${runtime.timeout.defaultMs}; more than ${runtime.timeout.maxMs} is capped to it).` },
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
    const { bindings: described, catalog, downNamespaces } = await live.current();
    const table = [...described, ...downCalls(args.program, downNamespaces)];
    toolNames = new Map(table.map(([path, { upstream, tool }]) => [path.join('.'), `${upstream.name}.${tool ?? path.at(-1)}`]));
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
          ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
          ...(runtime.retainsState ? { stateOwner: owner } : {}),
        });
      } catch (error) {
        return invalid(refusal(error, options.cwd));
      }
      deadline = spec.timeoutMs;
      let result;
      try {
        const progress = progressReporter(extra);
        // Progress belongs to this call: none after it answered.
        const onOutput = progress === undefined ? undefined : (entry: OutputEntry): void => {
          if (!kept) progress.onOutput(entry);
        };
        const options = { signal: extra.signal, onApproval: approver, ...(onOutput !== undefined ? { onOutput } : {}), ...traceMeta(request.params._meta) };
        result = yieldAfterMs === undefined ? await runtime.run(spec, options) : await runtime.run(spec, { ...options, yieldAfterMs });
        await progress?.sent();
      } catch (error) {
        // The runtime throws for misuse it can name, such as a second run while the session's environment is busy.
        return invalid(refusal(error, options.cwd));
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

/** The W3C trace context a client put in the tools/call `_meta` (keys traceparent, tracestate): the run's span joins that trace (docs/traces.md). */
function traceMeta(meta: Record<string, unknown> | undefined): { traceparent?: string; tracestate?: string } {
  if (meta === undefined) return {};
  const { traceparent, tracestate } = meta as { traceparent?: string; tracestate?: string };
  return { ...(traceparent !== undefined ? { traceparent } : {}), ...(tracestate !== undefined ? { tracestate } : {}) };
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
      if (tool === undefined) throw upstream.unavailable() ?? new UpstreamError(`upstream MCP server "${upstream.name}" came up after this run began; its tools are declared from the next run_code on`, 'UPSTREAM_DOWN');
      if (args.length > 1 || (args[0] !== undefined && (typeof args[0] !== 'object' || args[0] === null || Array.isArray(args[0])))) {
        throw Object.assign(new TypeError(`${path.join('.')} takes one argument object, got ${args.length} argument(s)`), { code: 'PTC_BAD_ARGUMENTS' });
      }
      if (!upstream.exact && hasBigInt(args[0])) throw Object.assign(new TypeError(`${path.join('.')}: an integer beyond 2^53 cannot be sent to an HTTP MCP server exactly (the MCP SDK writes its JSON); pass it as a string`), { code: 'PTC_BAD_ARGUMENTS' });
      const result = await upstream.call(tool, (args[0] ?? {}) as Record<string, unknown>, { signal, timeoutMs: timeoutMs() });
      return upstreamValue(result, files);
    };
    define(space, path.at(-1)!, gated === true ? binding(call, { approval: true }) : call);
  }
  return root;
}

/** Most members named per namespace of a down upstream: a program's text is a stranger's too. */
const MAX_DOWN_MEMBERS = 256;

/**
 * Bindings for the members of a down upstream's namespace that the program names (`gh.list_issues`,
 * `gh?.x`, `gh["x"]`): the upstream listed no tools, so there is no other way to know them. Each
 * fails with the BindingError UPSTREAM_DOWN that says why; a name found in a string or a comment
 * only adds a binding that is never called.
 */
function downCalls(program: string, namespaces: Map<string, Upstream>): Array<[string[], Binding]> {
  const calls: Array<[string[], Binding]> = [];
  for (const [namespace, upstream] of namespaces) {
    const escaped = namespace.replace(/\$/g, '\\$');
    const members = new Set<string>();
    const pattern = new RegExp(`(?<![\\w$.])${escaped}\\s*(?:\\?\\.|\\.)\\s*([A-Za-z_$][\\w$]*)|(?<![\\w$.])${escaped}\\s*(?:\\?\\.)?\\[\\s*(['"\`])([A-Za-z_$][\\w$]*)\\2\\s*\\]`, 'g');
    for (const match of program.matchAll(pattern)) {
      if (members.size >= MAX_DOWN_MEMBERS) break;
      members.add(match[1] ?? match[3]!);
    }
    // Without a member the namespace would not exist at all: one that says what it is keeps it.
    if (members.size === 0) members.add('upstream_down');
    // A member named is called as the tool of that name, should the upstream be up by then.
    for (const member of members) calls.push([[namespace, member], { upstream, tool: member === 'upstream_down' ? undefined : member }]);
  }
  return calls;
}

/** A run the runtime refused, in words; in a file system's root, which no workspace may be, what to do about it. */
function refusal(error: unknown, cwd: string | undefined): string {
  const hint = startedAtRoot(cwd) ? ` (ptc mcp runs programs in ${cwd ?? process.cwd()}, where it was started; start it with --cwd DIR to give programs a workspace)` : '';
  return `run_code: ${(error as Error).message}${hint}`;
}

/** Whether the cwd programs would run in is a file system's root, which no workspace may be. */
function startedAtRoot(cwd: string | undefined): boolean {
  try {
    const real = realpathSync(cwd ?? process.cwd());
    return parse(real).root === real;
  } catch {
    return false;
  }
}

function hasBigInt(value: unknown): boolean {
  if (typeof value === 'bigint') return true;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(hasBigInt);
}
