// `ptc mcp` runs that yield, driven by the official SDK's Client over stdio against dist/ptc: run_code
// with yieldAfterMs answers "still running" with the output so far, the wait tool returns the
// rest (an upstream call made after the yield included) and the result, every line once; wait
// with cancel stops a spinning program. Assumes `npm run build` has run.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const UPSTREAM = join(repoRoot, 'test', 'fixtures', 'mcp', 'upstream.mjs');
const dir = mkdtempSync(join(tmpdir(), 'ptc-mcp-yield-test-'));
writeFileSync(join(dir, 'servers.json'), JSON.stringify({ mcpServers: { tracker: { command: process.execPath, args: [UPSTREAM] } }, ptc: { timeoutMs: 60_000 } }));
assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
const transport = new StdioClientTransport({ command: BIN, args: ['mcp', '--config', join(dir, 'servers.json')], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stderr: 'pipe' });
const client = new Client({ name: 'ptc-test', version: '1.0.0' });
await client.connect(transport);

const call = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallToolResult;
const texts = (result: CallToolResult): string[] => result.content.map((item) => (item.type === 'text' ? item.text : `<${item.type}>`));
const STILL = (runId: string): string => `(still running as runId ${JSON.stringify(runId)}: call wait with {"runId": ${JSON.stringify(runId)}} for the output since this look and, once it ends, its result)`;

test('tools/list: run_code takes yieldAfterMs, and wait is described to the model', async () => {
  const { tools } = await client.listTools();
  const wait = tools.find((tool) => tool.name === 'wait')!;
  assert.ok(wait.description!.startsWith('Look again at a program that run_code left running'), wait.description);
  assert.equal(Object.keys(wait.inputSchema.properties!), ['runId', 'timeoutMs', 'cancel']);
  const runCode = tools.find((tool) => tool.name === 'run_code')!;
  assert.is((runCode.inputSchema.properties!.yieldAfterMs as { type: string }).type, 'integer');
});

test('run_code with yieldAfterMs answers still running; wait gives the rest and the result, every line once', async () => {
  const program = [
    'for (let i = 0; i < 8; i++) { console.log("line " + i); await new Promise((r) => setTimeout(r, 200)); }',
    'const echoed = await tracker.echo({ text: "after the yield" });',
    'console.error("echoed " + echoed);',
    'return 8;',
  ].join('\n');
  const first = await call('run_code', { program, yieldAfterMs: 500 });
  assert.is(first.isError, undefined, texts(first).join('\n'));
  const { status, runId } = first.structuredContent as { status: string; runId: string };
  assert.is(status, 'running');
  assert.is(texts(first).at(-1), STILL(runId));
  const looks = [first];
  looks.push(await call('wait', { runId, timeoutMs: 300 }));
  while ((looks.at(-1)!.structuredContent as { status: string }).status === 'running') looks.push(await call('wait', { runId }));
  const final = looks.at(-1)!;
  assert.is((final.structuredContent as { status: string }).status, 'ok');
  assert.is(texts(final).at(-1), '8');
  const printed = looks.flatMap((look) => texts(look)).filter((text) => !text.startsWith('(still running') && text !== '8').join('');
  assert.is(printed, `${Array.from({ length: 8 }, (_, i) => `line ${i}\n`).join('')}echoed you said: after the yield\n`);
  const again = await call('wait', { runId });
  assert.is(again.isError, true);
  assert.equal(texts(again), [`wait: no program left running has runId ${JSON.stringify(runId)} (a run is forgotten once a look returned its result)`]);
});

test('wait with cancel: true stops a spinning program, which ends as abort', async () => {
  const first = await call('run_code', { program: 'console.log("spinning"); while (true) {}', yieldAfterMs: 300 });
  const { runId } = first.structuredContent as { runId: string };
  const stopped = await call('wait', { runId, cancel: true });
  assert.is(stopped.isError, true);
  assert.is((stopped.structuredContent as { failure: { kind: string } }).failure.kind, 'abort');
});

test('bad yieldAfterMs and wait arguments are tool errors naming the value', async () => {
  assert.equal(texts(await call('run_code', { program: 'return 1', yieldAfterMs: 2.5 })), ['run_code: yieldAfterMs must be a non-negative integer of ms, got 2.5']);
  assert.equal(texts(await call('wait', { runId: 7 })), ['wait: runId must be the string run_code answered, got 7']);
  assert.equal(texts(await call('wait', { runId: 'x', timeoutMs: -1 })), ['wait: timeoutMs must be a non-negative integer of ms, got -1']);
});

test.after(async () => {
  await client.close();
  rmSync(dir, { recursive: true, force: true });
});

test.run();
