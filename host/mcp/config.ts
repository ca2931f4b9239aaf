// The `ptc mcp --config` file: the `mcpServers` shape MCP clients already use (stdio and
// Streamable HTTP upstreams), plus optional runtime fields under "ptc". Every error names the
// field and quotes the value; unknown fields are refused so a typo never goes unnoticed.
import { readFile } from 'node:fs/promises';
import type { RuntimeConfig } from '../index.ts';
import { parseApprovalRules, type ApprovalRule } from './approvals.ts';

export type UpstreamConfig = (
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | { kind: 'http'; url: URL; headers: Record<string, string> }
) & { startTimeoutMs: number };

/** How long tools/list waits for an upstream that is not up yet; a later one joins with tools/list_changed. */
export const START_TIMEOUT_MS = 5_000;

export interface McpConfig {
  upstreams: Map<string, UpstreamConfig>;
  ptc: RuntimeConfig;
  /** `ptc.descriptionBudget`: characters the run_code description may take. */
  descriptionBudget?: number;
  /** Per upstream: which of its tools wait for approval (approvals.ts); an upstream not named gates its destructive tools. */
  approval: Map<string, ApprovalRule>;
}

/** A problem with the config file or the flags: the CLI exits 2. */
export class McpConfigError extends Error {
  override name = 'McpConfigError';
}

const quote = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** Reads and validates the config file. */
export async function loadMcpConfig(path: string): Promise<McpConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new McpConfigError(`cannot read --config ${quote(path)}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new McpConfigError(`--config ${quote(path)} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  return parseMcpConfig(parsed, path);
}

export function parseMcpConfig(value: unknown, source: string): McpConfig {
  const at = (field: string): string => `${source}: ${field}`;
  if (!isRecord(value)) throw new McpConfigError(`${source} must hold a JSON object {"mcpServers": {...}, "ptc"?: {...}}, got ${quote(value)}`);
  for (const key of Object.keys(value)) {
    if (key !== 'mcpServers' && key !== 'ptc' && key !== 'approval') throw new McpConfigError(`${at(key)} is not a known field (expected "mcpServers" and optionally "ptc" and "approval")`);
  }
  if (!isRecord(value.mcpServers)) throw new McpConfigError(`${at('mcpServers')} must be an object of named servers, got ${quote(value.mcpServers)}`);
  if (value.ptc !== undefined && !isRecord(value.ptc)) throw new McpConfigError(`${at('ptc')} must be an object of runtime fields, got ${quote(value.ptc)}`);
  const upstreams = new Map<string, UpstreamConfig>();
  for (const [name, entry] of Object.entries(value.mcpServers)) {
    const field = (key?: string): string => at(`mcpServers.${name}${key === undefined ? '' : `.${key}`}`);
    if (!isRecord(entry)) throw new McpConfigError(`${field()} must be an object with "command" or "url", got ${quote(entry)}`);
    const http = entry.url !== undefined;
    const allowed = http ? ['url', 'headers', 'type', 'startTimeoutMs'] : ['command', 'args', 'env', 'cwd', 'type', 'startTimeoutMs'];
    for (const key of Object.keys(entry)) {
      if (!allowed.includes(key)) throw new McpConfigError(`${field(key)} is not a field of ${http ? 'a Streamable HTTP server (url, headers, startTimeoutMs)' : 'a stdio server (command, args, env, cwd, startTimeoutMs)'}`);
    }
    const startTimeoutMs = entry.startTimeoutMs ?? START_TIMEOUT_MS;
    if (typeof startTimeoutMs !== 'number' || !Number.isSafeInteger(startTimeoutMs) || startTimeoutMs <= 0) throw new McpConfigError(`${field('startTimeoutMs')} must be a positive integer of ms, got ${quote(entry.startTimeoutMs)}`);
    if (entry.type !== undefined && !(http ? ['http', 'streamable-http'] : ['stdio']).includes(entry.type as string)) {
      throw new McpConfigError(`${field('type')} must be ${http ? '"http" or "streamable-http"' : '"stdio"'} here, got ${quote(entry.type)}`);
    }
    if (http) {
      let url: URL;
      try {
        url = new URL(String(entry.url));
      } catch (error) {
        throw new McpConfigError(`${field('url')} must be an http(s) URL, got ${quote(entry.url)}`, { cause: error });
      }
      if (typeof entry.url !== 'string' || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new McpConfigError(`${field('url')} must be an http(s) URL, got ${quote(entry.url)}`);
      upstreams.set(name, { kind: 'http', url, headers: strings(entry.headers, field('headers')) ?? {}, startTimeoutMs });
      continue;
    }
    if (typeof entry.command !== 'string' || entry.command === '') throw new McpConfigError(`${field('command')} must be a non-empty string (or give "url" for an HTTP server), got ${quote(entry.command)}`);
    const args = entry.args ?? [];
    if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) throw new McpConfigError(`${field('args')} must be an array of strings, got ${quote(entry.args)}`);
    if (entry.cwd !== undefined && (typeof entry.cwd !== 'string' || entry.cwd === '')) throw new McpConfigError(`${field('cwd')} must be a directory path, got ${quote(entry.cwd)}`);
    const env = strings(entry.env, field('env'));
    upstreams.set(name, { kind: 'stdio', command: entry.command, args, ...(env ? { env } : {}), ...(entry.cwd !== undefined ? { cwd: entry.cwd as string } : {}), startTimeoutMs });
  }
  // descriptionBudget is ptc mcp's own field; the rest of "ptc" is the runtime's.
  const { descriptionBudget, ...ptc } = (value.ptc ?? {}) as Record<string, unknown>;
  if (ptc.discovery === false) throw new McpConfigError(`${at('ptc.discovery')}: ptc mcp always gives programs search() and describe(); it cannot be false`);
  let approval: Map<string, ApprovalRule>;
  try {
    approval = parseApprovalRules(value.approval, at('approval'), [...upstreams.keys()]);
  } catch (error) {
    throw new McpConfigError((error as Error).message);
  }
  return { upstreams, ptc: ptc as RuntimeConfig, approval, ...(descriptionBudget !== undefined ? { descriptionBudget: checkBudget(descriptionBudget, at('ptc.descriptionBudget')) } : {}) };
}

/** A description budget: a positive integer of characters. */
export function checkBudget(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) throw new McpConfigError(`${field} must be a positive integer of characters, got ${quote(value)}`);
  return value;
}

function strings(value: unknown, field: string): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value) || !Object.values(value).every((item) => typeof item === 'string')) throw new McpConfigError(`${field} must be an object of strings, got ${quote(value)}`);
  return value as Record<string, string>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
