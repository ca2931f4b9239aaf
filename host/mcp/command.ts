// `ptc mcp`: reads the servers file, connects the upstreams, and serves MCP on stdio until the
// client closes stdin (or a signal comes), or over Streamable HTTP (--http) until a signal; then
// every run, carrier and upstream is ended. --print-description prints what a client would see.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createRuntime, VERSION, type RuntimeConfig, type RuntimeDiagnostic } from '../index.ts';
import { checkBudget, loadMcpConfig, McpConfigError } from './config.ts';
import { createMcpServer } from './server.ts';
import { serveHttp, type Listen } from './http.ts';
import type { McpServerOptions } from './budget.ts';

export { McpConfigError };
export { parseListen } from './http.ts';

/**
 * An MCP client puts run_code's output into a model's context, so the default budget is far
 * below the library's 64 MiB; `ptc.maxOutputBytes` or `--max-output-bytes` changes it.
 */
export const MCP_MAX_OUTPUT_BYTES = 1_048_576;

export interface McpCommandOptions {
  /** --description-budget: overrides ptc.descriptionBudget. */
  descriptionBudget?: number;
  /** --cwd: where programs run. */
  cwd?: string;
  /** --http: serve Streamable HTTP here instead of stdio. */
  http?: Listen;
  /** --token or PTC_MCP_TOKEN: the bearer token HTTP requests must carry. */
  token?: string;
  /** --session-idle-ms: how long an HTTP session with no request in flight is kept. */
  sessionIdleMs?: number;
  /** --print-description: print run_code's description and exit. */
  printDescription?: boolean;
}

/**
 * Serves until stdin ends (or, over HTTP, a signal); resolves with the exit code. `withFlags` lays
 * the command-line flags over the file's "ptc" section.
 */
export async function serveMcp(configPath: string, withFlags: (ptc: Record<string, unknown>) => Promise<RuntimeConfig>, options: McpCommandOptions = {}): Promise<number> {
  const config = await loadMcpConfig(configPath);
  const budget = options.descriptionBudget !== undefined ? checkBudget(options.descriptionBudget, '--description-budget') : config.descriptionBudget;
  const serverOptions: McpServerOptions = { ...(budget !== undefined ? { descriptionBudget: budget } : {}), ...(options.cwd !== undefined ? { cwd: options.cwd } : {}) };
  let runtime;
  try {
    // Programs always have search() and describe(): past the budget they are how tools are found.
    // The host's log is stderr, which MCP clients keep as the server's log: a session's environment
    // lost while idle is written there when it happens (its next run_code also says so).
    const onDiagnostic = (diagnostic: RuntimeDiagnostic): void => void process.stderr.write(`ptc mcp: ${diagnostic.type}: ${diagnostic.message}\n`);
    runtime = createRuntime({ ...(await withFlags({ maxOutputBytes: MCP_MAX_OUTPUT_BYTES, ...config.ptc })), discovery: true, onDiagnostic });
  } catch (error) {
    throw new McpConfigError(`${configPath}: ptc: ${(error as Error).message}`, { cause: error });
  }
  const newServer = () => createMcpServer(runtime, config.upstreams, config.approval, serverOptions);
  const signalled = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  try {
    if (options.printDescription === true) {
      process.stdout.write(`${await describeOnce(newServer)}\n`);
      return 0;
    }
    if (options.http !== undefined) {
      await serveHttp(options.http, options.token, () => {
        const { server, closeUpstreams } = newServer();
        // Once: the transport's close and the shutdown may both ask.
        let closing: Promise<void> | undefined;
        return {
          connect: (transport) => server.connect(transport),
          close: () => (closing ??= server.close().catch(() => {}).then(closeUpstreams)),
        };
      }, signalled, (url) => void process.stderr.write(`ptc mcp: serving MCP over Streamable HTTP at ${url}${options.token === undefined ? '' : ' (bearer token required)'}\n`), options.sessionIdleMs);
      return 0;
    }
    const { server, closeUpstreams } = newServer();
    const transport = new StdioServerTransport();
    const done = new Promise<void>((resolve) => {
      // The stdio transport does not watch for end of input; the client closing stdin is the end.
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
      void signalled.then(resolve);
      server.onclose = resolve;
    });
    try {
      await server.connect(transport);
      await done;
    } finally {
      await server.close().catch(() => {});
      await closeUpstreams();
    }
    return 0;
  } finally {
    await runtime.dispose();
  }
}

/** run_code's description as a client that declares no capabilities gets it: through a client of ptc's own, in memory. */
async function describeOnce(newServer: () => ReturnType<typeof createMcpServer>): Promise<string> {
  const { server, closeUpstreams } = newServer();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'ptc mcp --print-description', version: VERSION });
  try {
    await server.connect(serverSide);
    await client.connect(clientSide);
    const { tools } = await client.listTools();
    return tools.find((tool) => tool.name === 'run_code')!.description!;
  } finally {
    await client.close().catch(() => {});
    await server.close().catch(() => {});
    await closeUpstreams();
  }
}
