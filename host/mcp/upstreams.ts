// The upstream MCP servers: one SDK Client each, over stdio or Streamable HTTP. An upstream that
// cannot be reached at start, or that goes away later, fails its own calls with a clear error and
// leaves the others (and the server) running.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { VERSION } from '../index.ts';
import type { UpstreamConfig } from './config.ts';

/** How long connecting to one upstream (spawn or HTTP, then initialize and tools/list) may take. */
const CONNECT_TIMEOUT_MS = 30_000;
/** Pages of tools/list read from one upstream: one that lists forever is cut off, not followed. */
const MAX_TOOL_PAGES = 100;

/** An error a binding throws: its `code` reaches the program's BindingError. */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  readonly code: string;
  constructor(message: string, code: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

export interface Upstream {
  readonly name: string;
  /** The tools it listed at start; empty when it is down. */
  readonly tools: Tool[];
  /** Why it cannot be used, when it cannot. */
  readonly down: string | undefined;
  call(tool: string, args: Record<string, unknown>, options: { signal: AbortSignal; timeoutMs: number | null }): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** Connects to every upstream at once; never rejects (a failed one is returned down). */
export function connectUpstreams(configs: Map<string, UpstreamConfig>): Promise<Upstream[]> {
  return Promise.all([...configs].map(([name, config]) => connect(name, config)));
}

async function connect(name: string, config: UpstreamConfig): Promise<Upstream> {
  const client = new Client({ name: 'ptc', version: VERSION });
  let down: string | undefined;
  let tools: Tool[] = [];
  client.onclose = () => {
    down ??= 'its connection closed';
  };
  try {
    const transport = config.kind === 'stdio'
      ? new StdioClientTransport({ command: config.command, args: config.args, ...(config.env ? { env: config.env } : {}), ...(config.cwd ? { cwd: config.cwd } : {}), stderr: 'inherit' })
      : new StreamableHTTPClientTransport(config.url, { requestInit: { headers: config.headers } });
    await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    const cursors = new Set<string>();
    for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
      if (cursors.size >= MAX_TOOL_PAGES) throw new Error(`its tools/list went on past ${MAX_TOOL_PAGES} pages`);
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: CONNECT_TIMEOUT_MS });
      tools.push(...page.tools);
      cursor = page.nextCursor;
      if (cursor !== undefined && cursors.has(cursor)) throw new Error(`its tools/list gave the cursor ${JSON.stringify(cursor)} twice`);
      if (cursor !== undefined) cursors.add(cursor);
    }
  } catch (error) {
    down = `it could not be started: ${(error as Error).message}`;
    tools = [];
    await client.close().catch(() => {});
  }
  const where = config.kind === 'stdio' ? `command ${JSON.stringify(config.command)}` : config.url.href;
  return {
    name,
    get tools() {
      return tools;
    },
    get down() {
      return down;
    },
    async call(tool, args, { signal, timeoutMs }) {
      if (down !== undefined) throw new UpstreamError(`upstream MCP server "${name}" (${where}) is down: ${down}`, 'UPSTREAM_DOWN');
      try {
        return (await client.callTool({ name: tool, arguments: args }, undefined, {
          signal,
          // The run's own deadline bounds the call; the SDK's 60 s default would cut long tools short.
          timeout: timeoutMs ?? 2 ** 31 - 1,
        })) as CallToolResult;
      } catch (error) {
        if (signal.aborted) throw error;
        const code = typeof (error as { code?: unknown }).code === 'number' ? `MCP_${(error as { code: number }).code}` : 'UPSTREAM_FAILED';
        const reason = down !== undefined ? `it went down (${down})` : (error as Error).message;
        throw new UpstreamError(`upstream MCP server "${name}" failed ${tool}: ${reason}`, down !== undefined ? 'UPSTREAM_DOWN' : code, { cause: error });
      }
    },
    async close() {
      down ??= 'ptc mcp is shutting down';
      await client.close().catch(() => {});
    },
  };
}
