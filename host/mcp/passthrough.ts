// The upstreams' resources and prompts, passed through ptc's server under names of its own, so
// that two upstreams never collide: a resource URI becomes `ptc:<upstream>/<its URI>` (a URI
// template likewise), and a prompt name `<upstream>/<its name>`, where <upstream> is the
// mcpServers key percent-encoded (encodeURIComponent, so it never holds a "/"): the first "/"
// ends it, whatever the upstream's own URI or name holds.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ErrorCode, GetPromptRequestSchema, ListPromptsRequestSchema, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, McpError, ReadResourceRequestSchema,
  type Prompt, type Resource, type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { UpstreamError, type Upstream } from './upstreams.ts';

/** Pages read from one upstream's list: one that lists forever is cut off, not followed. */
const MAX_PAGES = 100;
/** How long one upstream's list, read or get may take. */
const REQUEST_TIMEOUT_MS = 30_000;
const RESOURCE_SCHEME = 'ptc:';

/** An upstream's prefix: its name with every character a URI or the separator could confuse escaped. */
const prefix = (upstream: string): string => encodeURIComponent(upstream);

/** ptc's URI of an upstream's resource. */
export const resourceUri = (upstream: string, uri: string): string => `${RESOURCE_SCHEME}${prefix(upstream)}/${uri}`;
/** ptc's name of an upstream's prompt. */
export const promptName = (upstream: string, name: string): string => `${prefix(upstream)}/${name}`;

/** Answers resources/list, resources/templates/list, resources/read, prompts/list and prompts/get from the upstreams. */
export function passThrough(server: Server, upstreams: () => Promise<Upstream[]>): void {
  // Each list joins every upstream that is up and offers the capability: one page, no cursor.
  const gather = async <T>(capability: 'resources' | 'prompts', page: (client: Client, cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>, rename: (upstream: string, item: T) => T): Promise<T[]> => {
    const all: T[] = [];
    for (const upstream of await upstreams()) {
      if (upstream.down !== undefined) continue;
      const items = await upstream.ask(capability, (client) => readAll(client, page)).catch((error: unknown) => {
        // One upstream that fails its list must not take the others' away; the log says why.
        process.stderr.write(`ptc mcp: upstream "${upstream.name}" failed its ${capability} list: ${(error as Error).message}\n`);
        return undefined;
      });
      for (const item of items ?? []) all.push(rename(upstream.name, item));
    }
    return all;
  };

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: await gather<Resource>('resources', async (client, cursor) => {
      const { resources, nextCursor } = await client.listResources(cursor === undefined ? {} : { cursor }, { timeout: REQUEST_TIMEOUT_MS });
      return { items: resources, nextCursor };
    }, (upstream, resource) => ({ ...resource, uri: resourceUri(upstream, resource.uri) })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: await gather<ResourceTemplate>('resources', async (client, cursor) => {
      const { resourceTemplates, nextCursor } = await client.listResourceTemplates(cursor === undefined ? {} : { cursor }, { timeout: REQUEST_TIMEOUT_MS });
      return { items: resourceTemplates, nextCursor };
    }, (upstream, template) => ({ ...template, uriTemplate: resourceUri(upstream, template.uriTemplate) })),
  }));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: await gather<Prompt>('prompts', async (client, cursor) => {
      const { prompts, nextCursor } = await client.listPrompts(cursor === undefined ? {} : { cursor }, { timeout: REQUEST_TIMEOUT_MS });
      return { items: prompts, nextCursor };
    }, (upstream, prompt) => ({ ...prompt, name: promptName(upstream, prompt.name) })),
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { uri } = request.params;
    if (!uri.startsWith(RESOURCE_SCHEME)) throw new McpError(ErrorCode.InvalidParams, `resource ${JSON.stringify(uri)} is not one of ptc's: its URIs are ptc:<upstream>/<the upstream's URI>`);
    const { upstream, rest } = await find(uri.slice(RESOURCE_SCHEME.length), upstreams, `resource ${JSON.stringify(uri)}`);
    const result = await forward(upstream, 'resources', (client) => client.readResource({ ...request.params, uri: rest }, { signal: extra.signal, timeout: REQUEST_TIMEOUT_MS }));
    return { ...result, contents: result.contents.map((content) => ({ ...content, uri: resourceUri(upstream.name, content.uri) })) };
  });
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const { upstream, rest } = await find(name, upstreams, `prompt ${JSON.stringify(name)}`);
    const result = await forward(upstream, 'prompts', (client) => client.getPrompt({ ...request.params, name: rest }, { signal: extra.signal, timeout: REQUEST_TIMEOUT_MS }));
    // Resources a prompt embeds or links are named as resources/list names them.
    const messages = result.messages.map((message) => {
      const content = message.content;
      if (content.type === 'resource') return { ...message, content: { ...content, resource: { ...content.resource, uri: resourceUri(upstream.name, content.resource.uri) } } };
      if (content.type === 'resource_link') return { ...message, content: { ...content, uri: resourceUri(upstream.name, content.uri) } };
      return message;
    });
    return { ...result, messages };
  });
}

async function readAll<T>(client: Client, page: (client: Client, cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>): Promise<T[]> {
  const items: T[] = [];
  const cursors = new Set<string>();
  for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
    if (cursors.size >= MAX_PAGES) throw new Error(`its list went on past ${MAX_PAGES} pages`);
    const next = await page(client, cursor);
    items.push(...next.items);
    cursor = next.nextCursor;
    if (cursor !== undefined && cursors.has(cursor)) throw new Error(`its list gave the cursor ${JSON.stringify(cursor)} twice`);
    if (cursor !== undefined) cursors.add(cursor);
  }
  return items;
}

/** The upstream a ptc name belongs to, and the upstream's own name or URI. */
async function find(named: string, upstreams: () => Promise<Upstream[]>, what: string): Promise<{ upstream: Upstream; rest: string }> {
  const slash = named.indexOf('/');
  let name: string | undefined;
  try {
    name = slash === -1 ? undefined : decodeURIComponent(named.slice(0, slash));
  } catch {
    name = undefined;
  }
  const all = await upstreams();
  const upstream = all.find((candidate) => candidate.name === name);
  if (upstream === undefined) {
    throw new McpError(ErrorCode.InvalidParams, `${what} names no upstream of this server (${all.map((each) => JSON.stringify(prefix(each.name))).join(', ')}); ptc's names begin with the upstream and "/"`);
  }
  return { upstream, rest: named.slice(slash + 1) };
}

/** An upstream's answer, with its down state or missing capability as the client's error. */
async function forward<T>(upstream: Upstream, capability: 'resources' | 'prompts', request: (client: Client) => Promise<T>): Promise<T> {
  let result: T | undefined;
  try {
    result = await upstream.ask(capability, request);
  } catch (error) {
    if (error instanceof McpError) throw error;
    const message = error instanceof UpstreamError ? error.message : `upstream MCP server "${upstream.name}" failed: ${(error as Error).message}`;
    throw new McpError(ErrorCode.InternalError, message);
  }
  if (result === undefined) throw new McpError(ErrorCode.InvalidParams, `upstream MCP server "${upstream.name}" offers no ${capability}`);
  return result;
}
