// `ptc mcp` driven by the official SDK's Client over stdio, against dist/ptc and from source,
// bridging a real stdio upstream (test/fixtures/mcp/upstream.mjs), a Streamable HTTP upstream
// on 127.0.0.1 and one that does not exist. Assumes `npm run build` has run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { processAlive, repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const UPSTREAM = join(repoRoot, 'test', 'fixtures', 'mcp', 'upstream.mjs');
const PNG = readFileSync(join(repoRoot, 'test', 'fixtures', 'images', 'rgb-300x7.png'));
const LAUNCHES: Record<string, string[]> = { binary: [BIN], source: [process.execPath, join(repoRoot, 'host', 'cli', 'bin.ts')] };
const work = mkdtempSync(join(tmpdir(), 'ptc-mcp-test-'));

// The HTTP upstream runs for the whole suite; its port is ephemeral.
const http = spawn(process.execPath, [join(repoRoot, 'test', 'fixtures', 'mcp', 'http-upstream.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
const httpPort = await new Promise<number>((resolve, reject) => {
  http.stdout!.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim())));
  http.once('exit', (code) => reject(new Error(`http upstream exited ${code}`)));
});

interface Session {
  client: Client;
  dir: string;
  markers: string;
  pid: number;
  close(): Promise<void>;
}

/** Starts `ptc mcp` (with its own config, cwd, TMPDIR and marker dir) and connects a client. */
async function start(launch: string, flags: string[] = [], ptc: Record<string, unknown> = {}): Promise<Session> {
  const dir = mkdtempSync(join(work, `${launch}-`));
  const markers = join(dir, 'markers');
  const tmp = join(dir, 'tmp');
  for (const sub of [markers, tmp]) spawnSync('mkdir', ['-p', sub]);
  const config = {
    mcpServers: {
      tracker: { command: process.execPath, args: [UPSTREAM], env: { MARKER_DIR: markers } },
      weather: { url: `http://127.0.0.1:${httpPort}/mcp` },
      ghost: { command: join(dir, 'no-such-server') },
    },
    ptc: { timeoutMs: 30_000, ...ptc },
  };
  writeFileSync(join(dir, 'servers.json'), JSON.stringify(config));
  const [command, ...args] = LAUNCHES[launch]!;
  assert.ok(existsSync(command!), `${command} is missing: run "npm run build" first`);
  const transport = new StdioClientTransport({ command: command!, args: [...args, 'mcp', '--config', join(dir, 'servers.json'), ...flags], cwd: dir, env: { TMPDIR: tmp, PATH: process.env.PATH ?? '/usr/bin:/bin' }, stderr: 'pipe' });
  const client = new Client({ name: 'ptc-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, dir, markers, pid: transport.pid!, close: () => client.close() };
}

async function runCode(session: Session, program: string, extra: Record<string, unknown> = {}, options: { signal?: AbortSignal } = {}): Promise<CallToolResult> {
  return (await session.client.callTool({ name: 'run_code', arguments: { program, ...extra } }, undefined, { timeout: 60_000, ...options })) as CallToolResult;
}

const texts = (result: CallToolResult): string[] => result.content.map((item) => (item.type === 'text' ? item.text : `<${item.type}>`));

const gone = (pid: number): boolean => !processAlive(pid);

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(condition(), `gave up waiting for ${what}`);
}

for (const launch of Object.keys(LAUNCHES)) {
  let session: Session;

  test(`[${launch}] tools/list: one run_code tool whose description holds the guidance and every upstream's declarations`, async () => {
    session = await start(launch);
    const { tools } = await session.client.listTools();
    assert.equal(tools.map((tool) => tool.name), ['run_code', 'wait']);
    const [runCodeTool] = tools;
    assert.equal(runCodeTool!.inputSchema.required, ['program']);
    assert.equal(Object.keys(runCodeTool!.inputSchema.properties!), ['program', 'timeoutMs', 'yieldAfterMs']);
    const description = runCodeTool!.description!;
    assert.match(description, /Write the program as the body of an async function in TypeScript/);
    assert.match(description, /declare namespace tracker \{\n {2}\/\*\* List issues of the tracker\. \*\/\n {2}function list_issues\(args\?: \{/);
    assert.match(description, /\(The tool's name is "tracker\.get-issue"; call it as tracker\.get_issue\.\)\n {3}\*\/\n {2}function get_issue\(args: \{\n {4}id: number \/\* integer \*\/;\n {2}\}\): Promise<\{\n {4}issue: Issue;\n {4}comments: Comment\[\];\n {2}\}>;/);
    assert.match(description, /type Comment = \{\n {2}author: string;\n {2}\/\*\* @format date-time \*\/\n {2}at\?: string;\n {2}replies\?: Comment\[\];\n\};/);
    assert.match(description, /declare namespace weather \{\n {2}\/\*\* Forecast for a city\. \*\/\n {2}function forecast\(args: \{/);
    assert.match(description, /\/\/ ghost: unavailable \(it could not be started: spawn .*no-such-server ENOENT; ptc keeps reconnecting\); a call into its namespace fails with a BindingError \(code UPSTREAM_DOWN\) until it is up\./);
  });

  test(`[${launch}] a program calls upstream tools in a loop: JSON text, structuredContent, plain text, HTTP upstream`, async () => {
    const result = await runCode(session, [
      'const issues = await tracker.list_issues({ state: "all" });',
      'const authors: string[] = [];',
      'for (const issue of issues) {',
      '  const detail = await tracker.get_issue({ id: issue.id });',
      '  authors.push(detail.comments[0].replies[0].author);',
      '  inspect(`#${detail.issue.id} ${detail.issue.state}`);',
      '}',
      'inspect(await tracker.echo({ text: "hi" }));',
      'const forecast = await weather.forecast({ city: "Oslo", days: 2 });',
      'return { authors, forecast, big: 12345678901234567890n };',
    ].join('\n'));
    assert.is(result.isError, undefined);
    assert.equal(texts(result), ['#1 open\n#2 open\n#3 closed\nyou said: hi\n', '{"authors":["bob","bob","bob"],"forecast":{"city":"Oslo","highs":[20,21]},"big":12345678901234567890}']);
    const structured = result.structuredContent as any;
    assert.is(structured.status, 'ok');
    assert.equal(structured.value.forecast, { city: 'Oslo', highs: [20, 21] });
    // The output is in the content; structuredContent does not carry it twice.
    assert.is(structured.output, undefined);
    assert.is(structured.sandbox.mode, 'workspace-write');
  });

  test(`[${launch}] an upstream image becomes an Image and image content; its temp file is gone after the run`, async () => {
    const result = await runCode(session, 'const chart = await tracker.chart({});\ninspect("the chart:", chart);\nreturn { width: chart.width, height: chart.height }');
    assert.is(result.isError, undefined);
    assert.equal(result.content, [
      { type: 'text', text: 'the chart:\n' },
      { type: 'image', data: PNG.toString('base64'), mimeType: 'image/png' },
      { type: 'text', text: '{"width":300,"height":7}' },
    ]);
    // Written in the server's host directory (supervision/host-temp.ts), which lives as long as the server.
    const tmp = join(session.dir, 'tmp');
    const hostDirectories = readdirSync(tmp).filter((name) => /^ptc-\d+-\d+-/.test(name));
    assert.equal(hostDirectories.length, 1, readdirSync(tmp).join(' '));
    assert.equal(readdirSync(join(tmp, hostDirectories[0]!)).filter((name) => name.startsWith('mcp-')), []);
  });

  test(`[${launch}] failures: an exception, a timeout, isError as BindingError, a bad argument`, async () => {
    // A program that ends with an expression and no return: the hint reaches the model as text.
    const forgot = await runCode(session, 'inspect("counting"); const total = 2 + 3; total');
    assert.is(forgot.isError, undefined);
    assert.equal(texts(forgot), ['counting\n', '(the program ended with an expression and returned nothing: a program is an async function body, so write `return <expression>` to hand back its value)']);
    assert.equal(texts(await runCode(session, 'const total = 2 + 3;')), ['ok (no output, no value)']);

    const thrown = await runCode(session, 'inspect("before");\nthrow new RangeError("too far")');
    assert.is(thrown.isError, true);
    assert.equal(texts(thrown)[0], 'before\n');
    assert.match(texts(thrown)[1]!, /^program failed \(exception\): too far\nRangeError: too far\n {4}at .*program\.ts:2:7/);
    assert.is((thrown.structuredContent as any).failure.kind, 'exception');

    const timedOut = await runCode(session, 'while (true) {}', { timeoutMs: 1000 });
    assert.is(timedOut.isError, true);
    assert.equal(texts(timedOut), ['program failed (timeout): execution timed out during execution (deadline 1000 ms elapsed)']);
    assert.equal((timedOut.structuredContent as any).failure, { kind: 'timeout', message: 'execution timed out during execution (deadline 1000 ms elapsed)', timeoutMs: 1000 });

    const caught = await runCode(session, 'try { await tracker.fail({}); } catch (e) { return { name: e.name, message: e.message, code: e.code, binding: e.binding } }');
    assert.equal(texts(caught), ['{"name":"BindingError","message":"the tracker is on fire","code":"UPSTREAM_TOOL_ERROR","binding":"tracker.fail"}']);
    const uncaught = await runCode(session, 'await tracker.get_issue({ id: 99 })');
    assert.is(uncaught.isError, true);
    assert.equal((uncaught.structuredContent as any).failure.code, 'UPSTREAM_TOOL_ERROR');
    assert.match(texts(uncaught).at(-1)!, /^program failed \(exception\): no issue 99\n[\s\S]*binding: tracker\.get_issue \(code UPSTREAM_TOOL_ERROR\)$/);

    const badArgument = await runCode(session, 'try { await tracker.echo("hi", 2) } catch (e) { return [e.code, e.message] }');
    assert.equal(texts(badArgument), ['["PTC_BAD_ARGUMENTS","tracker.echo takes one argument object, got 2 argument(s)"]']);
    const notProgram = await session.client.callTool({ name: 'run_code', arguments: { program: 42 } });
    assert.is(notProgram.isError, true);
    assert.equal(texts(notProgram as CallToolResult), ['run_code: program must be a string, got 42']);
    // A model cannot turn the deadline off: null, a string or a fraction is refused like -5.
    for (const [timeoutMs, shown] of [[-5, '-5'], [null, 'null'], ['1000', '"1000"'], [1.5, '1.5']] as const) {
      const badTimeout = await session.client.callTool({ name: 'run_code', arguments: { program: 'return 1', timeoutMs } });
      assert.is(badTimeout.isError, true);
      assert.equal(texts(badTimeout as CallToolResult), [`run_code: timeoutMs must be a positive integer of ms (larger than 600000 is capped to it), got ${shown}`]);
    }
  });

  test(`[${launch}] cancellation from the client aborts the run and cancels its upstream call; the server keeps serving`, async () => {
    const controller = new AbortController();
    // The program beats while it lives and swallows binding errors, so only an abort can end it.
    const program = [
      'const { appendFileSync } = await import("node:fs");',
      'setInterval(() => appendFileSync("beat", "."), 20);',
      'while (true) {',
      '  try { await tracker.slow({ ms: 60000 }) } catch { await new Promise((resolve) => setTimeout(resolve, 50)) }',
      '}',
    ].join('\n');
    const pending = runCode(session, program, { timeoutMs: 120_000 }, { signal: controller.signal });
    const beat = join(session.dir, 'beat');
    await until(() => existsSync(beat) && readFileSync(beat, 'utf8').length > 5, 'the program to start beating');
    const cancelled = join(session.markers, 'slow-cancelled');
    assert.not.ok(existsSync(cancelled), 'the upstream call is still waiting');
    controller.abort(new Error('user pressed stop'));
    await pending.then(() => assert.unreachable('the cancelled call resolved'), (error: Error) => assert.match(String(error), /user pressed stop/));
    await until(() => existsSync(cancelled), 'the upstream to see notifications/cancelled');
    // The carrier is killed: the beat stops.
    let beats = -1;
    await until(() => {
      const now = readFileSync(beat, 'utf8').length;
      const still = now === beats;
      beats = now;
      return still;
    }, 'the beat to stop');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.is(readFileSync(beat, 'utf8').length, beats);
    const next = await runCode(session, 'return 1 + 1');
    assert.equal(texts(next), ['2']);
  });

  test(`[${launch}] an upstream that goes down fails its later calls clearly; closing stdin ends everything with exit 0`, async () => {
    const result = await runCode(session, [
      'try { await tracker.crash({}) } catch (e) { inspect(e.code) }',
      'try { await tracker.echo({ text: "x" }) } catch (e) { return { code: e.code, message: e.message } }',
    ].join('\n'));
    const value = JSON.parse(texts(result).at(-1)!);
    assert.is(value.code, 'UPSTREAM_DOWN');
    assert.match(value.message, /^upstream MCP server "tracker" \(command ".*node"\) is down: it exited with code 3 \(no stderr\); ptc keeps reconnecting \((next attempt in \d+ s|ptc is reconnecting now)\)$/);
    // The other upstream still works.
    assert.equal(texts(await runCode(session, 'return (await weather.forecast({ city: "Rome", days: 1 })).highs')), ['[20]']);
    // A bigint cannot go to an HTTP upstream exactly (the MCP SDK writes that JSON): refused, saying so.
    assert.equal(JSON.parse(texts(await runCode(session, 'try { await weather.forecast({ city: "Rome", days: 2n ** 60n }) } catch (e) { return [e.code, e.message] }')).at(-1)!), ['PTC_BAD_ARGUMENTS', 'weather.forecast: an integer beyond 2^53 cannot be sent to an HTTP MCP server exactly (the MCP SDK writes its JSON); pass it as a string']);
    const ptc = session.pid;
    await session.close();
    await until(() => gone(ptc), 'ptc mcp to exit');
  });

  test(`[${launch}] --mode persistent-in-memory: the session is one retained owner, and reset releases it`, async () => {
    const persistent = await start(launch, ['--mode', 'persistent-in-memory', '--max-output-bytes', '4096']);
    try {
      const { tools } = await persistent.client.listTools();
      assert.equal(tools.map((tool) => tool.name), ['run_code', 'reset', 'wait']);
      assert.match(tools[0]!.description!, /Write REPL statements in TypeScript/);
      assert.equal(texts(await runCode(persistent, 'let issues = await tracker.list_issues({})\nissues.length')), ['2']);
      assert.equal(texts(await runCode(persistent, 'issues.map((issue) => issue.id)')), ['[1,2]']);
      // One session is one owner: a second program while one runs is refused, and the first is unharmed.
      const first = runCode(persistent, '(await tracker.slow({ ms: 1500 })).waited');
      await until(() => existsSync(join(persistent.markers, 'slow-started')), 'the first program to be waiting on its upstream call');
      const second = await runCode(persistent, '1');
      assert.is(second.isError, true);
      assert.equal(texts(second), ['run_code: ptc run(): this stateOwner already has a run in progress; await it (and its cleanup) before starting another']);
      assert.equal(texts(await first), ['1500']);
      const reset = await persistent.client.callTool({ name: 'reset', arguments: {} });
      assert.equal(texts(reset as CallToolResult), ['The environment was reset: the next program starts fresh.']);
      assert.equal(texts(await runCode(persistent, 'typeof issues')), ['"undefined"']);
      // Output is bounded by maxOutputBytes (here from the flag).
      const flood = await runCode(persistent, 'inspect("x".repeat(10000))');
      assert.is(flood.isError, true);
      assert.is((flood.structuredContent as any).failure.kind, 'output-limit');
      assert.is(texts(flood)[0]!.length, 4096);
    } finally {
      await persistent.close();
    }
    // Closing the client's stdin ended ptc mcp and, through it, its stdio upstream.
    const upstreams = readdirSync(persistent.markers).filter((name) => name.endsWith('.pid')).map((name) => Number(/\d+/.exec(name)![0]));
    assert.is(upstreams.length, 1);
    for (const pid of [persistent.pid, ...upstreams]) await until(() => gone(pid), `process ${pid} to exit`);
  });
}

test('a bad config file is a usage error (exit 2) that names the field', () => {
  const file = join(work, 'bad.json');
  writeFileSync(file, JSON.stringify({ mcpServers: { tracker: { command: 'x', argv: [] } } }));
  const result = spawnSync(BIN, ['mcp', '--config', file], { encoding: 'utf8', input: '' });
  assert.is(result.status, 2);
  assert.is(result.stdout, '');
  assert.is(result.stderr, `ptc: ${file}: mcpServers.tracker.argv is not a field of a stdio server (command, args, env, cwd, startTimeoutMs)\n`);
});

test('with no upstreams, closing stdin at once exits 0 and prints nothing', () => {
  const empty = join(work, 'none.json');
  writeFileSync(empty, JSON.stringify({ mcpServers: {} }));
  const result = spawnSync(BIN, ['mcp', '--config', empty], { encoding: 'utf8', input: '' });
  assert.equal([result.status, result.stdout, result.stderr], [0, '', '']);
});

test('`ptc run` does not load the MCP SDK; `ptc mcp` does (module graph from source)', () => {
  const trace = (args: string[]): string[] => {
    const file = join(work, `trace-${args[0]}.txt`);
    const result = spawnSync(process.execPath, ['--import', join(repoRoot, 'test', 'fixtures', 'mcp', 'trace-loads.mjs'), join(repoRoot, 'host', 'cli', 'bin.ts'), ...args], { encoding: 'utf8', input: args[0] === 'run' ? 'return 1' : '', env: { ...process.env, PTC_TRACE_LOADS: file } });
    assert.is(result.status, 0, result.stderr);
    return readFileSync(file, 'utf8').split('\n');
  };
  const empty = join(work, 'empty.json');
  writeFileSync(empty, JSON.stringify({ mcpServers: {} }));
  const run = trace(['run', '-']);
  const mcp = trace(['mcp', '--config', empty]);
  assert.ok(run.some((url) => url.endsWith('/host/cli/cli.ts')));
  assert.equal(run.filter((url) => url.includes('@modelcontextprotocol') || url.includes('/host/mcp/')), []);
  assert.ok(mcp.some((url) => url.includes('/node_modules/@modelcontextprotocol/sdk/')));
});

test.after(() => {
  http.stdin!.end();
  rmSync(work, { recursive: true, force: true });
});

test.run();
