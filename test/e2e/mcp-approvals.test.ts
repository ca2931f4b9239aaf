// Approvals in the built `ptc mcp`, driven by the official SDK's Client: an upstream tool with
// destructiveHint: true waits for the user, who is asked through elicitation/create; accept runs
// it, decline makes it throw PTC_REJECTED; a client without the elicitation capability gets a
// clear refusal; the config's "approval" gates more tools or none. Calls are counted upstream.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type CallToolResult, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const UPSTREAM = join(repoRoot, 'test', 'fixtures', 'mcp', 'destructive-upstream.mjs');
const CAUGHT = 'catch (e) { return { code: e.code, message: e.message } }';

interface Session {
  client: Client;
  calls(): string[];
  asked: string[];
  close(): Promise<void>;
}

async function start(answer: ((message: string) => ElicitResult) | undefined, approval?: object): Promise<Session> {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const dir = mkdtempSync(join(tmpdir(), 'ptc-mcp-approvals-'));
  const callsFile = join(dir, 'calls');
  writeFileSync(join(dir, 'servers.json'), JSON.stringify({
    mcpServers: { repos: { command: process.execPath, args: [UPSTREAM], env: { CALLS: callsFile } } },
    ptc: { timeoutMs: 30_000, policy: { mode: 'full-access' } },
    ...(approval !== undefined ? { approval } : {}),
  }));
  const transport = new StdioClientTransport({ command: BIN, args: ['mcp', '--config', join(dir, 'servers.json')], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stderr: 'pipe' });
  const client = new Client({ name: 'ptc-test', version: '1.0.0' }, answer === undefined ? {} : { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  if (answer !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      const message = (request.params as { message: string }).message;
      asked.push(message);
      return answer(message);
    });
  }
  await client.connect(transport);
  return {
    client,
    asked,
    calls: () => (existsSync(callsFile) ? readFileSync(callsFile, 'utf8').split('\n').filter(Boolean) : []),
    close: async () => {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function runCode(session: Session, program: string): Promise<unknown> {
  const result = (await session.client.callTool({ name: 'run_code', arguments: { program } }, undefined, { timeout: 60_000 })) as CallToolResult;
  return (result.structuredContent as { value?: unknown }).value;
}

test('a destructive tool waits for the user, asked through elicitation: accept runs it once', async () => {
  const session = await start(() => ({ action: 'accept', content: { approve: true } }));
  try {
    const value = await runCode(session, 'const [first] = await repos.list_repos(); return await repos.delete_repo({ name: first })');
    assert.equal(value, { done: 'delete_repo', repo: 'a' });
    assert.equal(session.asked, ['The program wants to call repos.delete_repo with {"name":"a"}. Allow it?']);
    assert.equal(session.calls(), ['list_repos {}', 'delete_repo {"name":"a"}']);
  } finally {
    await session.close();
  }
});

test('an answer with forRun approves the tool\'s later calls in the run without asking again', async () => {
  const session = await start(() => ({ action: 'accept', content: { approve: true, forRun: true } }));
  try {
    const value = await runCode(session, 'for (const name of await repos.list_repos()) await repos.delete_repo({ name }); return "done"');
    assert.equal(value, 'done');
    assert.equal(session.asked, ['The program wants to call repos.delete_repo with {"name":"a"}. Allow it?']);
    assert.equal(session.calls(), ['list_repos {}', 'delete_repo {"name":"a"}', 'delete_repo {"name":"b"}']);
    assert.equal(await runCode(session, 'return await repos.delete_repo({ name: "a" })'), { done: 'delete_repo', repo: 'a' });
    assert.is(session.asked.length, 2, 'the next run is asked again');
  } finally {
    await session.close();
  }
});

test('decline throws PTC_REJECTED in the program, and the upstream tool is never called', async () => {
  const session = await start(() => ({ action: 'decline' }));
  try {
    const value = await runCode(session, `try { return await repos.delete_repo({ name: "a" }) } ${CAUGHT}`);
    assert.equal(value, { code: 'PTC_REJECTED', message: 'repos.delete_repo: rejected: declined by the user' });
    assert.equal(session.calls(), []);
  } finally {
    await session.close();
  }
});

test('a client without elicitation: the destructive call is refused with a clear message; others run', async () => {
  const session = await start(undefined);
  try {
    const value = await runCode(session, `await repos.archive_repo({ name: "b" }); try { return await repos.delete_repo({ name: "a" }) } ${CAUGHT}`);
    assert.equal(value, {
      code: 'PTC_REJECTED',
      message: 'repos.delete_repo: rejected: repos.delete_repo needs a person\'s approval, and this MCP client offers no way to ask one (MCP elicitation); the call was not made',
    });
    assert.equal(session.calls(), ['archive_repo {"name":"b"}']);
  } finally {
    await session.close();
  }
});

test('the config\'s "approval" gates named tools, or none', async () => {
  const listed = await start(() => ({ action: 'accept', content: { approve: false } }), { repos: ['archive_repo'] });
  try {
    const value = await runCode(listed, `try { await repos.delete_repo({ name: "a" }); return await repos.archive_repo({ name: "b" }) } ${CAUGHT}`);
    assert.equal(value, { code: 'PTC_REJECTED', message: 'repos.archive_repo: rejected: not allowed by the user' });
    assert.equal(listed.calls(), ['delete_repo {"name":"a"}']);
  } finally {
    await listed.close();
  }
  const none = await start(undefined, { repos: 'none' });
  try {
    assert.equal(await runCode(none, 'return await repos.delete_repo({ name: "a" })'), { done: 'delete_repo', repo: 'a' });
  } finally {
    await none.close();
  }
});

test.run();
