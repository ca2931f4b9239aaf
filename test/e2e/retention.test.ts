// idleTimeoutMs and maxRetainedEnvironments through the long-lived front ends: `ptc serve` (its
// flags and initialize's config) and `ptc mcp` (its flags and the "ptc" config), against
// dist/ptc and from source. A released owner's next run starts fresh and says why; the released
// carrier's process is gone. Assumes `npm run build` has run.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { processAlive, repoRoot, waitUntil } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const LAUNCHES: Record<string, string[]> = { 'dist/ptc': [BIN], source: [process.execPath, join(repoRoot, 'host', 'cli', 'bin.ts')] };
const work = mkdtempSync(join(tmpdir(), 'ptc-retention-test-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

const IDLE = (ms: number) => `the previous environment was idle for ${ms} ms (idleTimeoutMs), so it was released`;
const EVICTED = (most: number) => `the previous environment was the least recently used one past maxRetainedEnvironments (${most}), so it was released`;
const PID = 'var pid = process.pid; pid';

const gone = (pid: number): boolean => !processAlive(pid);

type Message = Record<string, any>;

/** A minimal JSON-RPC client of one `ptc serve` process (test/e2e/serve.test.ts has the full one). */
class ServeClient {
  readonly child: ChildProcessWithoutNullStreams;
  readonly #replies = new Map<unknown, (message: Message) => void>();
  #nextId = 0;
  #pending = '';

  constructor(command: string[], flags: string[]) {
    const [file, ...args] = command;
    this.child = spawn(file!, [...args, 'serve', ...flags], { cwd: repoRoot, env: { PATH: '/usr/bin:/bin' } });
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.#pending += chunk;
      let newline: number;
      while ((newline = this.#pending.indexOf('\n')) !== -1) {
        const message = JSON.parse(this.#pending.slice(0, newline)) as Message;
        this.#pending = this.#pending.slice(newline + 1);
        const waiter = this.#replies.get(message.id);
        this.#replies.delete(message.id);
        waiter?.(message);
      }
    });
  }

  request(method: string, params?: unknown): Promise<Message> {
    const id = ++this.#nextId;
    const reply = new Promise<Message>((resolve) => this.#replies.set(id, resolve));
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) })}\n`);
    return reply;
  }

  /** The run's result object (what `ptc run --json` prints). */
  async run(owner: string, program: string): Promise<Message> {
    const reply = await this.request('run', { program, owner });
    assert.ok(reply.result, JSON.stringify(reply));
    assert.is(reply.result.status, 'ok', JSON.stringify(reply.result));
    return reply.result;
  }

  close(): Promise<unknown> {
    this.child.stdin.end();
    return new Promise((resolve) => this.child.once('exit', resolve));
  }
}

async function mcpSession(command: string[], flags: string[], ptc: Record<string, unknown>): Promise<McpClient> {
  const dir = mkdtempSync(join(work, 'mcp-'));
  writeFileSync(join(dir, 'servers.json'), JSON.stringify({ mcpServers: {}, ptc: { timeoutMs: 30_000, ...ptc } }));
  const [file, ...args] = command;
  const transport = new StdioClientTransport({ command: file!, args: [...args, 'mcp', '--config', join(dir, 'servers.json'), ...flags], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stderr: 'pipe' });
  const client = new McpClient({ name: 'ptc-retention-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function runCode(client: McpClient, program: string): Promise<CallToolResult> {
  const result = (await client.callTool({ name: 'run_code', arguments: { program } }, undefined, { timeout: 60_000 })) as CallToolResult;
  assert.is(result.isError, undefined, JSON.stringify(result));
  return result;
}

for (const [label, command] of Object.entries(LAUNCHES)) {
  test(`${label} serve --idle-timeout-ms: an idle owner's carrier ends and its next run says why`, async () => {
    assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
    const client = new ServeClient(command, ['--mode', 'persistent-in-memory', '--sandbox', 'full-access', '--idle-timeout-ms', '300']);
    try {
      const first = await client.run('a', PID);
      assert.equal(first.environment, { fresh: true });
      assert.ok(await waitUntil(() => gone(first.value), 15_000), `carrier ${first.value} still runs after its idle release`);
      const next = await client.run('a', 'typeof pid');
      assert.equal([next.value, next.environment], ['undefined', { fresh: true, replaced: IDLE(300) }]);
    } finally {
      await client.close();
    }
  });

  test(`${label} serve, initialize config maxRetainedEnvironments: a second owner releases the first`, async () => {
    const client = new ServeClient(command, ['--mode', 'persistent-in-memory', '--sandbox', 'full-access']);
    try {
      const init = await client.request('initialize', { protocolVersion: 1, config: { maxRetainedEnvironments: 1 } });
      assert.ok(init.result, JSON.stringify(init));
      const a = await client.run('a', PID);
      const b = await client.run('b', PID);
      assert.ok(await waitUntil(() => gone(a.value), 15_000), `evicted carrier ${a.value} still runs`);
      assert.ok(!gone(b.value), 'the new owner\'s carrier ended');
      const again = await client.run('a', 'typeof pid');
      assert.equal([again.value, again.environment], ['undefined', { fresh: true, replaced: EVICTED(1) }]);
    } finally {
      await client.close();
    }
  });

  test(`${label} serve: a bad retention flag is a usage error that names it`, () => {
    const [file, ...args] = command;
    for (const [flags, message] of [
      [['--max-retained-environments', '0'], 'ptc: config: maxRetainedEnvironments must be a positive integer, got 0\n'],
      [['--idle-timeout-ms', 'soon'], 'ptc: --idle-timeout-ms must be a number, got "soon"\n'],
    ] as const) {
      const result = spawnSync(file!, [...args, 'serve', ...flags], { cwd: repoRoot, input: '', encoding: 'utf8', timeout: 30_000 });
      assert.equal([result.status, result.stderr], [2, message], flags.join(' '));
    }
  });

  test(`${label} mcp --idle-timeout-ms: the session's environment is released when idle; the model is told`, async () => {
    const client = await mcpSession(command, ['--mode', 'persistent-in-memory', '--idle-timeout-ms', '300'], { policy: { mode: 'full-access' } });
    try {
      const first = (await runCode(client, PID)).structuredContent as Message;
      assert.ok(await waitUntil(() => gone(first.value), 15_000), `carrier ${first.value} still runs after its idle release`);
      const next = await runCode(client, 'typeof pid');
      const structured = next.structuredContent as Message;
      assert.equal([structured.value, structured.environment], ['undefined', { fresh: true, replaced: IDLE(300) }]);
      assert.equal(next.content, [
        { type: 'text', text: `(${IDLE(300)}; this is a new environment and earlier variables are gone)` },
        { type: 'text', text: '"undefined"' },
      ]);
    } finally {
      await client.close();
    }
  });

  test(`${label} mcp: maxRetainedEnvironments from the "ptc" config and the flag is validated`, async () => {
    const [file, ...args] = command;
    const dir = mkdtempSync(join(work, 'mcp-bad-'));
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({ mcpServers: {}, ptc: { maxRetainedEnvironments: 2 } }));
    const bad = spawnSync(file!, [...args, 'mcp', '--config', join(dir, 'servers.json'), '--max-retained-environments', '-1'], { cwd: dir, input: '', encoding: 'utf8', timeout: 30_000 });
    assert.is(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /maxRetainedEnvironments must be a positive integer, got -1/);
    // One MCP session is one owner: with a limit of 1, `reset` releases the old owner before the new one needs a slot.
    const client = await mcpSession(command, ['--mode', 'persistent-in-memory', '--max-retained-environments', '1'], { policy: { mode: 'full-access' } });
    try {
      const first = (await runCode(client, PID)).structuredContent as Message;
      await client.callTool({ name: 'reset', arguments: {} });
      const after = (await runCode(client, 'typeof pid')).structuredContent as Message;
      assert.equal([after.value, after.environment], ['undefined', { fresh: true }]);
      assert.ok(await waitUntil(() => gone(first.value), 15_000), `reset carrier ${first.value} still runs`);
    } finally {
      await client.close();
    }
  });
}

test.run();
