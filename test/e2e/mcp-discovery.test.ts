// `ptc mcp` at any tool count, driven by the official SDK's Client against dist/ptc: with one
// upstream of 2,000 tools the run_code description stays under its budget, lists the namespace
// and declares search() and describe(), and a program finds a tool through them and calls it;
// --description-budget and ptc.descriptionBudget set the budget; a run's output streams as
// progress notifications to a client that sent a progressToken. Assumes `npm run build` has run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { repoRoot } from '../helpers/runtime.ts';
import { declared } from '../helpers/declared.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const MANY = join(repoRoot, 'test', 'fixtures', 'mcp', 'many-tools.mjs');
const TRACKER = join(repoRoot, 'test', 'fixtures', 'mcp', 'upstream.mjs');
const work = mkdtempSync(join(tmpdir(), 'ptc-mcp-discovery-'));

function configFile(name: string, servers: Record<string, string>, ptc: Record<string, unknown> = {}): string {
  const path = join(work, `${name}.json`);
  const mcpServers = Object.fromEntries(Object.entries(servers).map(([key, script]) => [key, { command: process.execPath, args: [script] }]));
  writeFileSync(path, JSON.stringify({ mcpServers, ptc: { timeoutMs: 30_000, ...ptc } }));
  return path;
}

async function connect(config: string, flags: string[] = []): Promise<Client> {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const transport = new StdioClientTransport({ command: BIN, args: ['mcp', '--config', config, ...flags], cwd: work, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: work }, stderr: 'pipe' });
  const client = new Client({ name: 'ptc-discovery-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function description(client: Client): Promise<{ text: string; code: string }> {
  const { tools } = await client.listTools();
  const text = tools.find((tool) => tool.name === 'run_code')!.description!;
  return { text, code: /^(`{3,})ts\n([^]*)\n\1$/m.exec(text)![2]! };
}

async function runCode(client: Client, program: string, options: { onprogress?: (progress: Progress) => void } = {}): Promise<CallToolResult> {
  return (await client.callTool({ name: 'run_code', arguments: { program } }, undefined, { timeout: 60_000, ...options })) as CallToolResult;
}

const texts = (result: CallToolResult): string => result.content.map((item) => (item.type === 'text' ? item.text : `<${item.type}>`)).join('\n');

test('2,000 tools: the description stays under the default budget, lists the namespace, and a program finds, describes and calls a tool', async () => {
  const client = await connect(configFile('many', { billing: MANY }));
  try {
    const { text, code } = await description(client);
    assert.ok(text.length <= 40_000, `the description is ${text.length} characters`);
    assert.match(code, /^\/\/ 2000 tools are too many to declare here/m);
    assert.match(code, /^\/\/ {3}billing: 2000 tools\. Declared by the upstream MCP server "billing"/m);
    const found = declared(code);
    assert.equal([found.errors, found.functions], [[], ['inspect', 'yieldControl', 'search', 'describe']]);
    assert.match(text, 'search("words") finds tools');

    const first = await runCode(client, `
      const { matches, truncated } = await search('refund a paid invoice', { limit: 3 });
      inspect(matches[0].path, truncated);
      inspect(await describe(matches[0].path));`);
    assert.not.ok(first.isError, texts(first));
    const shown = texts(first);
    assert.match(shown, /^billing\.invoice_refund true\n/);
    assert.match(shown, "/** Refund a paid invoice to the customer's original payment method. */\n  function invoice_refund(args: {");
    assert.match(shown, '    id: string;\n');

    // The next program calls it by the path that search gave, as a model would.
    const second = await runCode(client, `return await billing.invoice_refund({ id: 'inv_7', amount: 1250 })`);
    assert.not.ok(second.isError, texts(second));
    assert.equal(JSON.parse(texts(second)), { tool: 'invoice_refund', args: { id: 'inv_7', amount: 1250 } });
  } finally {
    await client.close();
  }
});

test('--description-budget and ptc.descriptionBudget: the whole declarations under the budget, the namespaces past it', async () => {
  const small = configFile('small', { tracker: TRACKER });
  let client = await connect(small);
  const full = await description(client);
  await client.close();
  assert.ok(declared(full.code).functions.includes('tracker.list_issues'));
  client = await connect(small, ['--description-budget', String(full.text.length - 1)]);
  try {
    const cut = await description(client);
    assert.ok(cut.text.length <= full.text.length - 1, `${cut.text.length} characters`);
    assert.equal(declared(cut.code).functions, ['inspect', 'yieldControl', 'search', 'describe']);
    assert.match(cut.code, /^\/\/ {3}tracker: 7 tools\. /m);
  } finally {
    await client.close();
  }
  client = await connect(configFile('budget', { tracker: TRACKER }, { descriptionBudget: 500 }));
  try {
    assert.equal(declared((await description(client)).code).functions, ['inspect', 'yieldControl', 'search', 'describe']);
  } finally {
    await client.close();
  }
  for (const [args, message] of [
    [['--description-budget', '0'], '--description-budget must be a positive integer of characters, got 0'],
    [['--description-budget', 'lots'], '--description-budget must be a number, got "lots"'],
  ] as const) {
    const child = spawnSync(BIN, ['mcp', '--config', small, ...args], { encoding: 'utf8', input: '' });
    assert.equal([child.status, child.stderr.includes(message)], [2, true], child.stderr);
  }
  const bad = configFile('bad', { tracker: TRACKER }, { descriptionBudget: '40k' });
  const child = spawnSync(BIN, ['mcp', '--config', bad], { encoding: 'utf8', input: '' });
  assert.equal([child.status, child.stderr.includes(`${bad}: ptc.descriptionBudget must be a positive integer of characters, got "40k"`)], [2, true], child.stderr);
});

test('a run\'s output streams as progress notifications, in order, to a client that asked for progress', async () => {
  const client = await connect(configFile('progress', { tracker: TRACKER }));
  try {
    const seen: Progress[] = [];
    // The last output comes well before the result: the SDK's client handles a notification a
    // microtask later than a response, so progress read in the same chunk as the result is dropped.
    const result = await runCode(client, `inspect('first'); await tracker.slow({ ms: 50 }); inspect('second'); inspect({ n: 3 }); await tracker.slow({ ms: 300 }); return 'done'`, { onprogress: (progress) => seen.push(progress) });
    assert.not.ok(result.isError, texts(result));
    assert.equal(seen.map((progress) => progress.message).join(''), 'first\nsecond\n{ n: 3 }\n');
    assert.ok(seen.every((progress, index) => index === 0 || progress.progress > seen[index - 1]!.progress), JSON.stringify(seen));
    assert.match(texts(result), /^first\nsecond\n\{ n: 3 \}\n/);
  } finally {
    await client.close();
  }
});

test.after(() => rmSync(work, { recursive: true, force: true }));
test.run();
