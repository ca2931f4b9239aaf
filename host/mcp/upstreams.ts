// The upstream MCP servers: one SDK Client each, over stdio or Streamable HTTP, each with its own
// life. They start at once and none holds the others or ptc's server: past its start bound an
// upstream that is not up yet is reported as starting, and it joins when it comes up. One that
// goes away is reconnected with a bounded backoff; its calls meanwhile fail with a clear error.
// A tools/list_changed from an upstream re-reads its tools. Every change is announced through
// `onChange`, so the server can rebuild its declarations and tell its own client.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolResultSchema, PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema, ToolListChangedNotificationSchema, type CallToolResult, type ClientCapabilities, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { VERSION } from '../index.ts';
import type { UpstreamConfig } from './config.ts';
import { forwardClientRequests } from './client-requests.ts';
import { stdioUpstream } from './stdio-upstream.ts';
import { LosslessSchemaValidator } from './lossless-validator.ts';

/** How long one connection attempt (spawn or HTTP, then initialize and tools/list) may take. */
const CONNECT_TIMEOUT_MS = 30_000;
/** Pages of tools/list read from one upstream: one that lists forever is cut off, not followed. */
const MAX_TOOL_PAGES = 100;
/** Reconnect delays double from the first to the cap (systemd's RestartSec doubling, capped as its RestartMaxDelaySec). */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;

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
  /** The tools it listed last: while it is down and being reconnected, the ones it had. */
  readonly tools: Tool[];
  /** Why it cannot be used now (still starting, or down and why), when it cannot; stable text, for the description. */
  readonly down: string | undefined;
  call(tool: string, args: Record<string, unknown>, options: { signal: AbortSignal; timeoutMs: number | null }): Promise<CallToolResult>;
  /** The error of a call made now, while it is down or starting; undefined when it is up. */
  unavailable(): UpstreamError | undefined;
  /** Whether a bigint in a call's arguments goes out exactly: ptc writes a stdio upstream's JSON itself. */
  readonly exact: boolean;
  /** Runs `request` on its client when it is up and offers `capability`; undefined when it does not offer it; throws UPSTREAM_DOWN when it is down. */
  ask<T>(capability: 'resources' | 'prompts', request: (client: Client) => Promise<T>): Promise<T | undefined>;
  close(): Promise<void>;
}

export interface UpstreamContext {
  /** What ptc declares to every upstream: what its own client declared (client-requests.ts). */
  capabilities: ClientCapabilities;
  /** ptc's own server, which forwards the upstreams' sampling, elicitation and roots requests. */
  server: Server;
  /** An upstream came up, went down or changed its tools. */
  onChange(): void;
  /** An upstream announced a change of its resources or prompts. */
  onListChanged?(kind: 'resources' | 'prompts'): void;
}

/**
 * Starts every upstream at once. `started` resolves when each has come up, failed its first
 * attempt or passed its own start bound, whichever is first for each: never later than the
 * longest bound, whatever an upstream does.
 */
export function startUpstreams(configs: Map<string, UpstreamConfig>, context: UpstreamContext): { upstreams: Upstream[]; started: Promise<void> } {
  const started: Array<Promise<void>> = [];
  const upstreams = [...configs].map(([name, config]) => {
    const upstream = new LiveUpstream(name, config, context);
    started.push(upstream.firstAttempt(config.startTimeoutMs));
    return upstream;
  });
  return { upstreams, started: Promise.all(started).then(() => {}) };
}

class LiveUpstream implements Upstream {
  readonly name: string;
  readonly #config: UpstreamConfig;
  readonly #context: UpstreamContext;
  readonly #where: string;
  #tools: Tool[] = [];
  #client: Client | undefined;
  #state = 'starting' as 'starting' | 'up' | 'down' | 'closed';
  #reason = '';
  #reported = '';
  #retry: { timer: NodeJS.Timeout; wake: () => void; at: number } | undefined;
  #first: Promise<void>;

  constructor(name: string, config: UpstreamConfig, context: UpstreamContext) {
    this.name = name;
    this.#config = config;
    this.#context = context;
    this.#where = config.kind === 'stdio' ? `command ${JSON.stringify(config.command)}` : config.url.href;
    this.#first = this.#run();
  }

  get tools(): Tool[] {
    return this.#tools;
  }

  get down(): string | undefined {
    if (this.#state === 'up') return undefined;
    if (this.#state === 'starting') return 'it is still starting (it has not finished initialize and tools/list); it joins when it does';
    if (this.#state === 'closed') return 'ptc mcp is shutting down';
    return `${this.#reason}; ptc keeps reconnecting`;
  }

  /** When the next attempt is, for a call's error. */
  #next(): string {
    return this.#retry === undefined ? 'ptc is reconnecting now' : `next attempt in ${Math.max(1, Math.round((this.#retry.at - Date.now()) / 1000))} s`;
  }

  /** Resolves when the first attempt has ended or `boundMs` passed. */
  firstAttempt(boundMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, boundMs);
      timer.unref();
    });
    return Promise.race([this.#first, bound, this.#settledOnce()]).finally(() => {
      clearTimeout(timer);
      if (this.#state === 'starting') process.stderr.write(`ptc mcp: upstream "${this.name}" is not up after ${boundMs} ms (startTimeoutMs); ptc serves without it until it is\n`);
    });
  }

  #settled: Array<() => void> = [];
  #settledOnce(): Promise<void> {
    return new Promise((resolve) => this.#settled.push(resolve));
  }

  /** Connect, serve until the connection closes, wait, again: until close(). */
  async #run(): Promise<void> {
    // The state changes under the awaits (close() may come at any time), so it is re-read each time.
    const closed = (): boolean => this.#state === 'closed';
    for (let failures = 0; !closed();) {
      const connection = await this.#connect();
      for (const resolve of this.#settled.splice(0)) resolve();
      if (closed()) return;
      if (connection !== undefined) {
        failures = 0;
        await connection.end;
        if (closed()) return;
      }
      const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** failures++);
      await this.#wait(delay);
    }
  }

  /** One attempt; on success returns a promise of the connection's end (in an object: an async function would adopt it). */
  async #connect(): Promise<{ end: Promise<void> } | undefined> {
    // The lossless validator: structuredContent read from a stdio upstream may hold bigints.
    const client = new Client({ name: 'ptc', version: VERSION }, { capabilities: this.#context.capabilities, jsonSchemaValidator: new LosslessSchemaValidator() });
    forwardClientRequests(client, this.#context.server, this.#context.capabilities);
    const stdio = this.#config.kind === 'stdio' ? stdioUpstream(this.#config) : undefined;
    const transport = stdio?.transport ?? new StreamableHTTPClientTransport((this.#config as Extract<UpstreamConfig, { kind: 'http' }>).url, { requestInit: { headers: (this.#config as Extract<UpstreamConfig, { kind: 'http' }>).headers } });
    let ended!: () => void;
    const end = new Promise<void>((resolve) => {
      ended = resolve;
    });
    // The exit status and stderr arrive around the close; read them a turn later.
    const death = (): Promise<string | undefined> => new Promise((resolve) => setImmediate(() => resolve(stdio?.death())));
    let connected = false;
    client.onclose = () => {
      ended();
      // A close during the attempt is the attempt's failure, reported once by the catch below.
      if (!connected || this.#client !== client || this.#state === 'closed') return;
      this.#client = undefined;
      void death().then((how) => this.#setDown(how === undefined ? 'its connection closed' : `it ${how}`));
    };
    this.#client = client;
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
      const tools = await listAll(client);
      if (this.#state === 'closed') throw new Error('ptc mcp is shutting down');
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#refresh(client));
      client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.#context.onListChanged?.('resources'));
      client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.#context.onListChanged?.('prompts'));
      this.#tools = tools;
      this.#state = 'up';
      connected = true;
      this.#reported = '';
      if (this.#reason !== '') process.stderr.write(`ptc mcp: upstream "${this.name}" is up (${tools.length} tools)\n`);
      this.#reason = '';
      this.#context.onChange();
      return { end };
    } catch (error) {
      this.#client = undefined;
      // Read before close(), whose kill would otherwise be reported as the server's own death.
      const how = await death();
      await client.close().catch(() => {});
      if (this.#state === 'closed') return undefined;
      this.#setDown(`it could not be started: ${(error as Error).message}${how === undefined ? '' : ` (it ${how})`}`);
      return undefined;
    }
  }

  #setDown(reason: string): void {
    // The tools stay declared: a restart usually brings the same ones back, and a model that
    // calls one meanwhile learns why it fails.
    this.#state = 'down';
    this.#reason = reason;
    // Each reason once: a server that keeps failing the same way is not reported at every retry.
    if (reason !== this.#reported) process.stderr.write(`ptc mcp: upstream "${this.name}" is unavailable: ${reason}\n`);
    this.#reported = reason;
    this.#context.onChange();
  }

  #listing: Promise<void> | undefined;
  #again = false;
  /** Re-reads the tool list; notifications that arrive meanwhile make one more read, not one each. */
  #refresh(client: Client): void {
    if (this.#listing !== undefined) {
      this.#again = true;
      return;
    }
    this.#listing = (async () => {
      do {
        this.#again = false;
        const tools = await listAll(client);
        if (this.#client !== client || this.#state !== 'up') return;
        this.#tools = tools;
        this.#context.onChange();
      } while (this.#again);
    })()
      .catch((error: unknown) => {
        process.stderr.write(`ptc mcp: upstream "${this.name}" announced new tools but its tools/list failed: ${(error as Error).message}; its earlier tools stay\n`);
      })
      .finally(() => {
        this.#listing = undefined;
      });
  }

  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#retry = undefined;
        resolve();
      }, ms);
      timer.unref();
      this.#retry = { timer, wake: resolve, at: Date.now() + ms };
    });
  }

  async call(tool: string, args: Record<string, unknown>, { signal, timeoutMs }: { signal: AbortSignal; timeoutMs: number | null }): Promise<CallToolResult> {
    const client = this.#client;
    if (this.#state !== 'up' || client === undefined) throw this.unavailable()!;
    // The call gets its own signal, tied to the run's only while it is in flight: the SDK keeps
    // its abort listener after the reply, and would send notifications/cancelled for a call that
    // had long completed when the run ends.
    const own = new AbortController();
    const abort = (): void => own.abort(signal.reason);
    if (signal.aborted) abort();
    signal.addEventListener('abort', abort, { once: true });
    // The run's own deadline bounds the call; the SDK's 60 s default would cut long tools short.
    const options = { signal: own.signal, timeout: timeoutMs ?? 2 ** 31 - 1 };
    try {
      const listed = this.#tools.find((item) => item.name === tool);
      if (listed?.execution?.taskSupport === 'required') return await callAsTask(client, tool, args, options);
      return (await client.callTool({ name: tool, arguments: args }, undefined, options)) as CallToolResult;
    } catch (error) {
      if (signal.aborted) throw error;
      const down = this.#client !== client;
      const code = typeof (error as { code?: unknown }).code === 'number' ? `MCP_${(error as { code: number }).code}` : 'UPSTREAM_FAILED';
      const reason = down ? `it went down (${await this.#downReason()})` : (error as Error).message;
      throw new UpstreamError(`upstream MCP server "${this.name}" failed ${tool}: ${reason}`, down ? 'UPSTREAM_DOWN' : code, { cause: error });
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  unavailable(): UpstreamError | undefined {
    if (this.#state === 'up' && this.#client !== undefined) return undefined;
    return new UpstreamError(`upstream MCP server "${this.name}" (${this.#where}) is down: ${this.down}${this.#state === 'down' ? ` (${this.#next()})` : ''}`, 'UPSTREAM_DOWN');
  }

  get exact(): boolean {
    return this.#config.kind === 'stdio';
  }

  async ask<T>(capability: 'resources' | 'prompts', request: (client: Client) => Promise<T>): Promise<T | undefined> {
    const client = this.#client;
    if (this.#state !== 'up' || client === undefined) throw this.unavailable()!;
    if (client.getServerCapabilities()?.[capability] === undefined) return undefined;
    return request(client);
  }

  /** The reason of a death that is being recorded this very turn. */
  async #downReason(): Promise<string> {
    for (let turns = 0; this.#state === 'up' && turns < 3; turns++) await new Promise((resolve) => setImmediate(resolve));
    return this.#reason || 'its connection closed';
  }

  async close(): Promise<void> {
    this.#state = 'closed';
    if (this.#retry !== undefined) {
      clearTimeout(this.#retry.timer);
      this.#retry.wake();
    }
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => {});
    await this.#first.catch(() => {});
  }
}

async function listAll(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  const cursors = new Set<string>();
  for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
    if (cursors.size >= MAX_TOOL_PAGES) throw new Error(`its tools/list went on past ${MAX_TOOL_PAGES} pages`);
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: CONNECT_TIMEOUT_MS });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    if (cursor !== undefined && cursors.has(cursor)) throw new Error(`its tools/list gave the cursor ${JSON.stringify(cursor)} twice`);
    if (cursor !== undefined) cursors.add(cursor);
  }
  return tools;
}

/** A tool that runs only as an MCP task (taskSupport "required"): create it, follow it, take its result. */
async function callAsTask(client: Client, tool: string, args: Record<string, unknown>, options: { signal: AbortSignal; timeout: number }): Promise<CallToolResult> {
  for await (const message of client.experimental.tasks.callToolStream({ name: tool, arguments: args }, CallToolResultSchema, { ...options, task: {} })) {
    if (message.type === 'result') return message.result as CallToolResult;
    if (message.type === 'error') throw message.error;
  }
  throw new Error(`the task for ${tool} ended without a result`);
}
