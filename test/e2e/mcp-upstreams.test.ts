// `ptc mcp` (the built dist/ptc) over the published MCP servers (server-everything, -filesystem,
// -memory, -sequential-thinking, installed from the registry as devDependencies) and over
// misbehaving upstreams of our own (test/fixtures/mcp/quirky-upstream.mjs): one that exits at
// start, one that does not answer initialize until told, one that sends what the SDK's Server
// would not. Driven by the official SDK's Client, which declares sampling, elicitation and roots
// and answers them. Assumes `npm run build` has run.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import ts from 'typescript';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const QUIRKY = join(repoRoot, 'test', 'fixtures', 'mcp', 'quirky-upstream.mjs');
const PNG = join(repoRoot, 'test', 'fixtures', 'images', 'rgb-300x7.png');
const server = (name: string): string => join(repoRoot, 'node_modules', '@modelcontextprotocol', `server-${name}`, 'dist', 'index.js');
const work = mkdtempSync(join(tmpdir(), 'ptc-mcp-upstreams-'));

interface Session {
  client: Client;
  dir: string;
  stderr(): string;
  description(): Promise<string>;
  /** Resolves at ptc's next tools/list_changed. */
  changed(): Promise<void>;
  run(program: string): Promise<CallToolResult>;
  close(): Promise<void>;
}

async function start(name: string, mcpServers: (dir: string) => Record<string, unknown>, capabilities: Record<string, unknown>): Promise<Session> {
  const dir = mkdtempSync(join(work, `${name}-`));
  mkdirSync(join(dir, 'tmp'));
  writeFileSync(join(dir, 'servers.json'), JSON.stringify({ mcpServers: mcpServers(dir), ptc: { timeoutMs: 60_000 } }));
  const transport = new StdioClientTransport({ command: BIN, args: ['mcp', '--config', join(dir, 'servers.json')], cwd: dir, env: { TMPDIR: join(dir, 'tmp'), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  const client = new Client({ name: 'ptc-upstreams-test', version: '1.0.0' }, { capabilities });
  if ('sampling' in capabilities) client.setRequestHandler(CreateMessageRequestSchema, (request) => ({ role: 'assistant', model: 'test-model', content: { type: 'text', text: `sampled: ${(request.params.messages[0]!.content as { text: string }).text}` } }));
  if ('elicitation' in capabilities) client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'decline' }));
  if ('roots' in capabilities) client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: pathToFileURL(dir).href, name: 'the test directory' }] }));
  let waiters: Array<() => void> = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    for (const resolve of waiters.splice(0)) resolve();
  });
  await client.connect(transport);
  return {
    client,
    dir,
    stderr: () => stderr,
    description: async () => (await client.listTools()).tools[0]!.description!,
    // Bounded only so that a ptc that never sends list_changed fails the test instead of hanging it.
    changed: () => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no tools/list_changed from ptc within 60 s')), 60_000);
      waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    }),
    run: async (program) => (await client.callTool({ name: 'run_code', arguments: { program } }, undefined, { timeout: 120_000 })) as CallToolResult,
    close: () => client.close(),
  };
}

const texts = (result: CallToolResult): string[] => result.content.map((item) => (item.type === 'text' ? item.text : `<${item.type}>`));
const last = (result: CallToolResult): string => texts(result).at(-1)!;
const code = (description: string): string => /^```ts\n([^]*)\n```$/m.exec(description)![1]!;

let full: Session;

test('start: ptc initializes and lists at once, without the upstream that has not answered initialize; the one that died at start is reported with its exit code and stderr', async () => {
  full = await start('full', (dir) => ({
    everything: { command: process.execPath, args: [server('everything'), 'stdio'] },
    files: { command: process.execPath, args: [server('filesystem'), dir] },
    memory: { command: process.execPath, args: [server('memory')], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
    thinking: { command: process.execPath, args: [server('sequential-thinking')], env: { DISABLE_THOUGHT_LOGGING: 'true' } },
    quirky: { command: process.execPath, args: [QUIRKY] },
    late: { command: process.execPath, args: [QUIRKY], env: { QUIRKY_READY: join(dir, 'ready') }, startTimeoutMs: 1000 },
    broken: { command: process.execPath, args: [QUIRKY], env: { QUIRKY_EXIT: '4' } },
  }), { sampling: {}, elicitation: {}, roots: {} });
  const description = await full.description();
  const declarations = code(description);
  for (const tool of ['everything.echo', 'files.read_media_file', 'memory.create_entities', 'thinking.sequentialthinking', 'quirky.big']) {
    const [namespace, name] = tool.split('.');
    assert.match(declarations, new RegExp(`declare namespace ${namespace} \\{[^]*?function ${name}\\(`), tool);
  }
  // server-everything registers these only for a client that declared sampling, elicitation and roots.
  for (const name of ['trigger_sampling_request', 'trigger_elicitation_request', 'get_roots_list', 'simulate_research_query']) assert.match(declarations, new RegExp(`function ${name}\\(`), name);
  assert.not.match(description, /declared no/);
  assert.match(declarations, /^\/\/ late: unavailable \(it is still starting \(it has not finished initialize and tools\/list\); it joins when it does\); a call into its namespace fails with a BindingError \(code UPSTREAM_DOWN\) until it is up\.$/m);
  assert.match(declarations, /^\/\/ broken: unavailable \(it could not be started: .* \(it exited with code 4; its stderr ended: "quirky: no API key in QUIRKY_KEY"\); ptc keeps reconnecting\); a call into its namespace fails with a BindingError \(code UPSTREAM_DOWN\) until it is up\.$/m);
  assert.match(full.stderr(), /ptc mcp: upstream "late" is not up after 1000 ms \(startTimeoutMs\); ptc serves without it until it is\n/);
  assert.match(full.stderr(), /ptc mcp: upstream "broken" is unavailable: it could not be started: .*exited with code 4/);
  // A duplicate name is reported, and names equal after mapping are both bound.
  assert.match(declarations, /^\/\/ quirky: lists the tool "dup" 2 times; only the first of them is declared and called\.$/m);
  assert.equal(JSON.parse(last(await full.run('return [await quirky.dup({}), await quirky.x({}), await quirky.x_y({})]'))), [{ called: 'dup' }, { called: 'x' }, { called: 'x.y' }]);
});

test('a program type-checked against the description compiles: the runtime globals are declared', () => {
  const program = [
    'const echoed = await everything.echo({ message: "hi" });',
    'inspect(echoed);',
    'try { await quirky.die({}); } catch (error) { if (error instanceof BindingError) inspect(error.code, error.binding, error.message); }',
    'const image: Image = await Image.fromFile("chart.png");',
    'inspect(image.width, image.height, process.cwd());',
    'return image.path;',
  ].join('\n');
  return full.description().then((description) => {
    const dir = mkdtempSync(join(work, 'typecheck-'));
    writeFileSync(join(dir, 'tools.d.ts'), code(description));
    writeFileSync(join(dir, 'program.ts'), `export {};\nasync function main() {\n${program}\n}\nvoid main;\n`);
    const checked = ts.createProgram([join(dir, 'tools.d.ts'), join(dir, 'program.ts')], {
      strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ['lib.es2023.d.ts'], types: ['node'], typeRoots: [join(repoRoot, 'node_modules', '@types')],
    });
    const errors = ts.getPreEmitDiagnostics(checked).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    assert.equal(errors, []);
  });
});

test('Promise.all over 200 upstream calls: every call is answered (calls past maxPendingCalls wait for a slot)', async () => {
  const result = await full.run('const all = await Promise.all(Array.from({ length: 200 }, (_, i) => everything.echo({ message: `m${i}` })));\nreturn [all.length, all[0], all[199]];');
  assert.is(result.isError, undefined, JSON.stringify(result.content));
  assert.equal(JSON.parse(last(result)), [200, 'Echo: m0', 'Echo: m199']);
});

test('sampling, elicitation and roots requests from an upstream reach ptc\'s client, and a taskSupport "required" tool runs as a task', async () => {
  const result = await full.run([
    'const sampled = await everything.trigger_sampling_request({ prompt: "two words" });',
    'const elicited = await everything.trigger_elicitation_request({});',
    'const roots = await everything.get_roots_list({});',
    'const research = await everything.simulate_research_query({ topic: "ptc" });',
    'return { sampled: JSON.stringify(sampled), elicited: JSON.stringify(elicited), roots: JSON.stringify(roots), research: JSON.stringify(research) };',
  ].join('\n'));
  assert.is(result.isError, undefined, JSON.stringify(result.content));
  const value = JSON.parse(last(result));
  assert.match(value.sampled, /sampled: Resource trigger-sampling-request context: two words/);
  assert.match(value.elicited, /decline/i);
  assert.match(value.roots, new RegExp(pathToFileURL(full.dir).href));
  assert.match(value.research, /ptc/);
});

test('published servers: read_media_file\'s image arrives as an Image; memory and sequential thinking answer', async () => {
  copyFileSync(PNG, join(full.dir, 'chart.png'));
  const result = await full.run([
    `const media = await files.read_media_file({ path: ${JSON.stringify(join(full.dir, 'chart.png'))} });`,
    'const image = media.content[0];',
    'await memory.create_entities({ entities: [{ name: "ptc", entityType: "tool", observations: ["runs programs"] }] });',
    'const graph = await memory.read_graph({});',
    'const thought = await thinking.sequentialthinking({ thought: "one", thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false });',
    'return { isImage: image instanceof Image, size: [image.width, image.height], entity: graph.entities[0].name, thought: thought.thoughtNumber };',
  ].join('\n'));
  assert.is(result.isError, undefined, JSON.stringify(result.content));
  assert.equal(JSON.parse(last(result)), { isImage: true, size: [300, 7], entity: 'ptc', thought: 1 });
});

test('lossless: integers past 2^53 and -0 from JSON text and structuredContent reach the program and the run_code text exactly; multi-item texts are parsed; audio keeps its data', async () => {
  const result = await full.run([
    'const big = await quirky.big({});',
    'const structured = await quirky.structured({});',
    'const multi = await quirky.multi({});',
    'return { types: [typeof big.n, typeof structured.n, Object.is(big.z, -0), Object.is(structured.z, -0)], big, structured, multi };',
  ].join('\n'));
  assert.is(result.isError, undefined, JSON.stringify(result.content));
  assert.is(last(result), '{"types":["bigint","bigint",true,true],"big":{"n":12345678901234567890,"z":-0},"structured":{"n":12345678901234567891,"z":-0},"multi":[{"a":1},"plain",{"type":"audio","data":"UklGRiQAAABXQVZF","mimeType":"audio/wav"}]}');
});

test('completed upstream calls get no notifications/cancelled when the run ends', async () => {
  await full.run('await quirky.big({}); await quirky.multi({}); return 1');
  assert.equal(JSON.parse(last(await full.run('return await quirky.cancellations({})'))), []);
});

test('the output budget (1 MiB by default) bounds the whole response: structuredContent does not repeat the output', async () => {
  const result = await full.run('inspect("x".repeat(1_000_000)); return 1');
  assert.is(result.isError, undefined);
  assert.ok(JSON.stringify(result).length < 1_100_000, `the response is ${JSON.stringify(result).length} characters`);
  assert.is((result.structuredContent as { output?: unknown }).output, undefined);
});

test('a late upstream joins, and an upstream\'s tools/list_changed refreshes the declarations: ptc sends its own list_changed', async () => {
  const joined = full.changed();
  writeFileSync(join(full.dir, 'ready'), '');
  await joined;
  for (let i = 0; i < 100 && !/declare namespace late/.test(await full.description()); i++) await full.changed();
  assert.match(code(await full.description()), /declare namespace late \{/);
  assert.equal(JSON.parse(last(await full.run('return await late.x({})'))), { called: 'x' });

  const grown = full.changed();
  assert.equal(texts(await full.run('return await quirky.grow({})')), ['"grown"']);
  await grown;
  assert.match(code(await full.description()), /\/\*\* Added by grow\. \*\/\n {2}function added\(/);
  assert.equal(texts(await full.run('return await quirky.added({}).catch((error) => error.message)')), ['"no tool added"']);
});

test('an upstream that goes down fails its calls with a BindingError saying why, and is reconnected', async () => {
  const result = await full.run([
    'const seen = [];',
    'for (let i = 0; i < 2; i++) {',
    '  try { await quirky.die({}); } catch (error) { seen.push([error instanceof BindingError, error.code, error.message]); }',
    '}',
    'return seen;',
  ].join('\n'));
  const seen = JSON.parse(last(result)) as Array<[boolean, string, string]>;
  assert.equal(seen.map(([isBindingError, errorCode]) => [isBindingError, errorCode]), [[true, 'UPSTREAM_DOWN'], [true, 'UPSTREAM_DOWN']]);
  assert.match(seen[0]![2], /^upstream MCP server "quirky" failed die: it went down \(it exited with code 5; its stderr ended: "quirky: dying on request"\)$/);
  assert.match(seen[1]![2], /^upstream MCP server "quirky" \(command ".*"\) is down: it exited with code 5; its stderr ended: "quirky: dying on request"; ptc keeps reconnecting \((next attempt in \d+ s|ptc is reconnecting now)\)$/);
  for (let i = 0; i < 100 && /quirky: down/.test(await full.description()); i++) await full.changed();
  assert.not.match(await full.description(), /quirky: down/);
  assert.equal(JSON.parse(last(await full.run('return await quirky.x({})'))), { called: 'x' });
  assert.match(full.stderr(), /ptc mcp: upstream "quirky" is up/);
  await full.close();
});

test('a client that declares no sampling, elicitation or roots: the tools that need them are missing, and the model\'s text says nothing of capabilities', async () => {
  const bare = await start('bare', () => ({ everything: { command: process.execPath, args: [server('everything'), 'stdio'] } }), {});
  try {
    const description = await bare.description();
    assert.not.match(description, /declared no|capabilit|The MCP client running this server/);
    assert.match(code(description), /function echo\(/);
    for (const name of ['trigger_sampling_request', 'trigger_elicitation_request', 'get_roots_list']) assert.not.match(code(description), new RegExp(`function ${name}\\(`), name);
  } finally {
    await bare.close();
  }
});

test.after(() => {
  rmSync(work, { recursive: true, force: true });
});

test.run();
