// `ptc mcp`: reads the servers file, connects the upstreams, and serves MCP on stdio until the
// client closes stdin (or a signal comes); then every run, carrier and upstream is ended.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createRuntime, type RuntimeConfig, type RuntimeDiagnostic } from '../index.ts';
import { checkBudget, loadMcpConfig, McpConfigError } from './config.ts';
import { createMcpServer } from './server.ts';

export { McpConfigError };

/**
 * An MCP client puts run_code's output into a model's context, so the default budget is far
 * below the library's 64 MiB; `ptc.maxOutputBytes` or `--max-output-bytes` changes it.
 */
export const MCP_MAX_OUTPUT_BYTES = 1_048_576;

/**
 * Serves until stdin ends; resolves with the exit code. `withFlags` lays the command-line flags
 * over the file's "ptc" section, and `descriptionBudget` (--description-budget) overrides its own.
 */
export async function serveMcp(configPath: string, withFlags: (ptc: Record<string, unknown>) => Promise<RuntimeConfig>, descriptionBudget?: number): Promise<number> {
  const config = await loadMcpConfig(configPath);
  const budget = descriptionBudget !== undefined ? checkBudget(descriptionBudget, '--description-budget') : config.descriptionBudget;
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
  const { server, closeUpstreams } = createMcpServer(runtime, config.upstreams, config.approval, budget !== undefined ? { descriptionBudget: budget } : {});
  const transport = new StdioServerTransport();
  const done = new Promise<void>((resolve) => {
    // The stdio transport does not watch for end of input; the client closing stdin is the end.
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    server.onclose = resolve;
  });
  try {
    await server.connect(transport);
    await done;
  } finally {
    await server.close().catch(() => {});
    await Promise.all([runtime.dispose(), closeUpstreams()]);
  }
  return 0;
}
