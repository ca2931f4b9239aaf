// `ptc mcp` for any MCP client, through the built dist/ptc: the official SDK's Client over stdio
// and over Streamable HTTP (--http), upstream resources and prompts passed through under ptc's
// names, a down upstream as a BindingError, big integers exact both ways through an upstream's
// outputSchema, the run_code input schema, --print-description, --cwd, and the HTTP listener's
// refusals (a non-loopback address without a token, a request without the token). The upstreams
// are test/fixtures/mcp/exact-upstream.mjs, twice, and a command that does not exist. Assumes
// `npm run build` has run.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const EXACT = join(repoRoot, 'test', 'fixtures', 'mcp', 'exact-upstream.mjs');
const work = mkdtempSync(join(tmpdir(), 'ptc-mcp-front-'));
const workspace = join(work, 'workspace');
mkdirSync(workspace);
mkdirSync(join(work, 'tmp'));
const CONFIG = join(work, 'servers.json');
writeFileSync(CONFIG, JSON.stringify({
  mcpServers: {
    // Bounds far past a loaded machine's start of a Node server, so both are up at the first list.
    a: { command: process.execPath, args: [EXACT], env: { EXACT_NAME: 'a' }, startTimeoutMs: 60_000 },
    'b/c': { command: process.execPath, args: [EXACT], env: { EXACT_NAME: 'b/c' }, startTimeoutMs: 60_000 },
    gh: { command: join(work, 'no-such-gh') },
  },
  ptc: { timeoutMs: 60_000 },
}));
const env = { TMPDIR: join(work, 'tmp'), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work };
const TOKEN = 'a-test-token-of-32-characters-ok';

async function rejects(promise: () => Promise<unknown>, pattern: RegExp): Promise<void> {
  const error = await promise().then(() => undefined, (reason: unknown) => reason as Error);
  assert.ok(error !== undefined, `expected a rejection matching ${pattern}`);
  assert.match(error!.message, pattern);
}

const texts = (result: CallToolResult): string[] => result.content.map((item) => (item.type === 'text' ? item.text : `<${item.type}>`));
const last = (result: CallToolResult): string => texts(result).at(-1)!;
const run = async (client: Client, program: string): Promise<CallToolResult> => (await client.callTool({ name: 'run_code', arguments: { program } }, undefined, { timeout: 120_000 })) as CallToolResult;

async function overStdio(args: string[] = [], cwd = work): Promise<{ client: Client; stderr(): string }> {
  const transport = new StdioClientTransport({ command: BIN, args: ['mcp', '--config', CONFIG, ...args], cwd, env, stderr: 'pipe' });
  let stderr = '';
  transport.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  const client = new Client({ name: 'ptc-front-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

/** Starts `ptc mcp --http`, resolves with its URL once it listens; `exited` resolves with its exit code and stderr. */
function overHttp(args: string[], extraEnv: Record<string, string> = {}): { url: Promise<string>; exited: Promise<{ code: number | null; stderr: string }>; stop(): void } {
  const child = spawn(BIN, ['mcp', '--config', CONFIG, ...args], { cwd: workspace, env: { ...env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  let found: (url: string) => void;
  const url = new Promise<string>((resolve) => (found = resolve));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
    const match = /serving MCP over Streamable HTTP at (\S+)/.exec(stderr);
    if (match) found(match[1]!);
  });
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
  return { url, exited, stop: () => child.kill('SIGTERM') };
}

/** What every session must show, whichever transport it came by. */
async function frontEndChecks(client: Client): Promise<void> {
  // run_code's input schema: timeoutMs is an integer of at least 1, and 2.5 is refused.
  const { tools } = await client.listTools();
  const runCode = tools.find((tool) => tool.name === 'run_code')!;
  assert.equal(runCode.inputSchema.properties!.timeoutMs, { type: 'integer', minimum: 1, description: 'Deadline in ms (default 60000; more than 600000 is capped to it).' });
  assert.equal(runCode.inputSchema.properties!.program, { type: 'string', description: 'The TypeScript program.' });
  assert.not.match(runCode.description!, /declared no|capabilit|sampling|elicitation/);
  assert.match(runCode.description!, /^\/\/ gh: unavailable \(it could not be started: spawn .*no-such-gh ENOENT; ptc keeps reconnecting\); a call into its namespace fails with a BindingError \(code UPSTREAM_DOWN\) until it is up\.$/m);

  // Resources, templates and prompts of both upstreams, under ptc's names: no collision.
  const { resources } = await client.listResources();
  assert.equal(resources.map((resource) => [resource.uri, resource.description]), [['ptc:a/notes://readme', 'The readme of a'], ['ptc:b%2Fc/notes://readme', 'The readme of b/c']]);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.equal(resourceTemplates.map((template) => template.uriTemplate), ['ptc:a/notes://{name}', 'ptc:b%2Fc/notes://{name}']);
  const read = await client.readResource({ uri: 'ptc:b%2Fc/notes://readme' });
  assert.equal(read.contents, [{ uri: 'ptc:b%2Fc/notes://readme', mimeType: 'text/plain', text: 'b/c says: notes://readme' }]);
  const fromTemplate = await client.readResource({ uri: 'ptc:a/notes://todo' });
  assert.equal((fromTemplate.contents[0] as { text: string }).text, 'a says: notes://todo');
  const { prompts } = await client.listPrompts();
  assert.equal(prompts.map((prompt) => prompt.name), ['a/greet', 'b%2Fc/greet']);
  const prompt = await client.getPrompt({ name: 'b%2Fc/greet', arguments: { who: 'Ada' } });
  assert.equal(prompt.messages, [
    { role: 'user', content: { type: 'text', text: 'b/c greets Ada' } },
    { role: 'user', content: { type: 'resource', resource: { uri: 'ptc:b%2Fc/notes://readme', mimeType: 'text/plain', text: 'the readme' } } },
  ]);
  await rejects(() => client.readResource({ uri: 'ptc:zz/notes://readme' }), /resource "ptc:zz\/notes:\/\/readme" names no upstream of this server \("a", "b%2Fc", "gh"\)/);
  await rejects(() => client.getPrompt({ name: 'gh/greet' }), /upstream MCP server "gh" \(command ".*no-such-gh"\) is down: it could not be started: spawn .*ENOENT/);

  // A down upstream: its namespace exists, and a call into it is a BindingError with the reason.
  const down = await run(client, [
    'const kind = typeof gh;',
    'try { await gh.list_issues({ state: "open" }); } catch (error) { return [kind, error instanceof BindingError, error.code, error.binding, error.message]; }',
  ].join('\n'));
  const [kind, isBindingError, code, bindingName, message] = JSON.parse(last(down)) as [string, boolean, string, string, string];
  assert.equal([kind, isBindingError, code, bindingName], ['object', true, 'UPSTREAM_DOWN', 'gh.list_issues']);
  assert.match(message, /^upstream MCP server "gh" \(command ".*no-such-gh"\) is down: it could not be started: spawn .*no-such-gh ENOENT; ptc keeps reconnecting \((next attempt in \d+ s|ptc is reconnecting now)\)$/);

  // Big integers both ways: listed past 2^53 under an outputSchema "integer", sent back exactly.
  const exact = await run(client, [
    'const { issues } = await a.list_issues({});',
    'const big = issues[0].id;',
    'const again = await a.get_issue({ id: big });',
    'const small = await a.get_issue({ id: 7 });',
    'return { type: typeof big, same: again.id === big, again, small };',
  ].join('\n'));
  assert.is(exact.isError, undefined, JSON.stringify(exact.content));
  assert.is(last(exact), '{"type":"bigint","same":true,"again":{"id":12345678901234567891,"title":"Overflow"},"small":{"id":7,"title":"Small"}}');
}

test('over stdio: resources, prompts, a down upstream, big integers both ways, the integer schema', async () => {
  const { client } = await overStdio([], workspace);
  try {
    await frontEndChecks(client);
    const refused = await client.callTool({ name: 'run_code', arguments: { program: 'return 1', timeoutMs: 2.5 } }) as CallToolResult;
    assert.equal(texts(refused), ['run_code: timeoutMs must be a positive integer of ms (larger than 600000 is capped to it), got 2.5']);
  } finally {
    await client.close();
  }
});

test('over Streamable HTTP with a token: the same, each session its own; no token or a wrong one is 401', async () => {
  const server = overHttp(['--http', '127.0.0.1:0'], { PTC_MCP_TOKEN: TOKEN });
  try {
    const url = new URL(await server.url);
    assert.match(url.href, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const headers = { Authorization: `Bearer ${TOKEN}` };
    const first = new Client({ name: 'ptc-front-http', version: '1.0.0' });
    await first.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
    const second = new Client({ name: 'ptc-front-http-2', version: '1.0.0' });
    const secondTransport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
    await second.connect(secondTransport);
    try {
      await frontEndChecks(first);
      assert.equal(JSON.parse(last(await run(second, 'return 40 + 2'))), 42);
      // DELETE ends the session: its id is then unknown.
      const ended = secondTransport.sessionId!;
      await secondTransport.terminateSession();
      const after = await fetch(url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': ended } });
      assert.is(after.status, 404);
      assert.match(await after.text(), /no session .*: it ended, or this server restarted; initialize a new one/);
    } finally {
      await first.close();
      await second.close();
    }
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${TOKEN}`]) {
      const response = await fetch(url, { method: 'POST', body: initialize, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) } });
      assert.is(response.status, 401, String(authorization));
      assert.is(response.headers.get('www-authenticate'), 'Bearer');
    }
    const client = new Client({ name: 'ptc-front-no-token', version: '1.0.0' });
    await rejects(() => client.connect(new StreamableHTTPClientTransport(url)), /401|Unauthorized/);
  } finally {
    server.stop();
    assert.is((await server.exited).code, 0);
  }
});

test('over Streamable HTTP without a token on loopback: served; a Host header that is not loopback is refused', async () => {
  const server = overHttp(['--http', '0']);
  try {
    const url = new URL(await server.url);
    const client = new Client({ name: 'ptc-front-loopback', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    assert.equal(JSON.parse(last(await run(client, 'return process.cwd()'))), workspace);
    await client.close();
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const rebound = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-H', 'Host: evil.example:80', '-H', 'content-type: application/json', '-H', 'accept: application/json, text/event-stream', '--data', initialize, url.href], { encoding: 'utf8' });
    assert.is(rebound.stdout, '403');
  } finally {
    server.stop();
    assert.is((await server.exited).code, 0);
  }
});

test('--session-idle-ms: a run longer than the bound completes; a client gone without DELETE has its session closed once nothing is in flight', async () => {
  const server = overHttp(['--http', '0', '--session-idle-ms', '200']);
  try {
    const url = new URL(await server.url);
    const transport = new StreamableHTTPClientTransport(url);
    const client = new Client({ name: 'ptc-front-idle', version: '1.0.0' });
    await client.connect(transport);
    assert.equal(JSON.parse(last(await run(client, 'await new Promise((resolve) => setTimeout(resolve, 1000)); return "slept"'))), 'slept');
    const id = transport.sessionId!;
    await client.close();
    const listed = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    let status = 0;
    // Polled until closed, each poll after five times the bound (a poll is a request of the session,
    // which restarts its idle time); the 60 polls are the test's own limit, not a timing claim.
    for (let tries = 0; tries < 60 && status !== 404; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      status = (await fetch(url, { method: 'POST', body: listed, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' } })).status;
    }
    assert.is(status, 404);
  } finally {
    server.stop();
    assert.is((await server.exited).code, 0);
  }
});

test('a non-loopback address without a token is refused before listening (exit 2, saying why)', async () => {
  const { code, stderr } = await overHttp(['--http', '0.0.0.0:0']).exited;
  assert.is(code, 2);
  assert.match(stderr, /--http 0\.0\.0\.0:0 would accept connections from other machines, and any of them could run programs: give a token \(PTC_MCP_TOKEN, or --token\) that clients must send as "Authorization: Bearer <token>", or listen on loopback \(127\.0\.0\.1\)/);
  const weak = await overHttp(['--http', '0.0.0.0:0', '--token', 'short']).exited;
  assert.is(weak.code, 2);
  assert.match(weak.stderr, /the bearer token \(--token or PTC_MCP_TOKEN\) must be at least 16 characters, got 5/);
});

test('--print-description prints run_code\'s description without a client, and exits 0', () => {
  const printed = spawnSync(BIN, ['mcp', '--config', CONFIG, '--print-description'], { cwd: workspace, env, encoding: 'utf8', timeout: 60_000 });
  assert.is(printed.status, 0, printed.stderr);
  assert.match(printed.stdout, /^Run a TypeScript program that calls the tools below\.\n/);
  assert.match(printed.stdout, /declare namespace a \{\n {2}\/\*\* Every issue\. \*\/\n {2}function list_issues\(/);
  assert.match(printed.stdout, /^\/\/ gh: unavailable \(it could not be started: spawn .*no-such-gh ENOENT/m);
  assert.match(printed.stderr, /ptc mcp: upstream "gh" is unavailable/);
});

test('started in /: a run says to start ptc mcp with --cwd, and no advice gives up the sandbox; --cwd DIR runs programs there', async () => {
  const atRoot = await overStdio([], '/');
  try {
    const result = await run(atRoot.client, 'return 1');
    assert.is(result.isError, true);
    assert.equal(texts(result), [`run_code: ptc sandbox policy: cwd (the default workspaceRoot) '/' would make every path writable; name a directory below it (the workspace is the cwd unless workspaceRoot names one), or use mode "read-only" (ptc mcp runs programs in /, where it was started; start it with --cwd DIR to give programs a workspace)`]);
    assert.not.match(texts(result).join('\n'), /full-access/);
  } finally {
    await atRoot.client.close();
  }
  const moved = await overStdio(['--cwd', workspace], '/');
  try {
    const result = await run(moved.client, 'await import("node:fs/promises").then((fs) => fs.writeFile("made.txt", "x")); return process.cwd()');
    assert.is(result.isError, undefined, JSON.stringify(result.content));
    assert.equal(JSON.parse(last(result)), workspace);
  } finally {
    await moved.client.close();
  }
  const missing = spawnSync(BIN, ['mcp', '--config', CONFIG, '--cwd', join(work, 'nowhere')], { env, encoding: 'utf8', input: '' });
  assert.is(missing.status, 2);
  assert.match(missing.stderr, /--cwd ".*nowhere": no such directory/);
});

test.after(() => {
  rmSync(work, { recursive: true, force: true });
});

test.run();
