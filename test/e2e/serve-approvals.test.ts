// Approvals through the built `ptc serve`: a run's `approval` gates the named tools, each waiting
// call is an `approval` notification, and `approve`/`reject` decide it; the approval timeout and
// Promise.all of gated calls, as a client in another language sees them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';
import { ServeClient, type Message } from '../helpers/serve-client.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const CAUGHT = 'catch (e) { return { code: e.code, message: e.message } }';

async function withServer(body: (client: ServeClient, invoked: string[]) => Promise<void>, config: object = {}): Promise<void> {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const client = new ServeClient(BIN, ['serve']);
  const invoked: string[] = [];
  client.onInvoke = (message) => {
    invoked.push(`${message.params.name}(${JSON.stringify(message.params.args)})`);
    client.send({ jsonrpc: '2.0', id: message.id, result: { done: message.params.args[0] } });
  };
  try {
    await client.request('initialize', { protocolVersion: 1, config: { timeoutMs: 30_000, policy: { mode: 'full-access' }, ...config } });
    await body(client, invoked);
  } finally {
    assert.is(await client.close(), 0, client.stderr);
  }
}

test('approve: the notification names the run, position, tool and arguments; the tool runs once, after it', async () => {
  await withServer(async (client, invoked) => {
    const notes: Message[] = [];
    client.onNotification = (message) => {
      if (message.method !== 'approval') return;
      notes.push(message.params);
      assert.equal(invoked, ['issues.list([])'], 'the gated tool has not been invoked before the decision');
      void client.request('approve', { runId: message.params.runId, sequence: message.params.sequence }).then((reply) => assert.equal(reply.result, { decided: true }));
    };
    const reply = await client.request('run', {
      runId: 'r1',
      program: 'await issues.list(); return await issues.close_all("repo")',
      tools: [{ name: 'issues.list' }, { name: 'issues.close-all' }],
      approval: ['issues.close-all'],
    });
    assert.equal(reply.result.value, { done: 'repo' });
    assert.equal(notes, [{ runId: 'r1', sequence: 2, kind: 'call', name: 'issues.close-all', args: ['repo'] }]);
    assert.equal(invoked, ['issues.list([])', 'issues.close-all(["repo"])']);
    // Decided and gone: a second decision decides nothing.
    assert.equal((await client.request('reject', { runId: 'r1', sequence: 2 })).result, { decided: false });
  });
});

test('reject: the program catches PTC_REJECTED with the reason, and the tool is never invoked', async () => {
  await withServer(async (client, invoked) => {
    client.onNotification = (message) => {
      if (message.method === 'approval') void client.request('reject', { runId: message.params.runId, sequence: message.params.sequence, reason: 'no' });
    };
    const reply = await client.request('run', { program: `try { return await drop("db") } ${CAUGHT}`, tools: [{ name: 'drop' }], approval: ['drop'] });
    assert.equal(reply.result.value, { code: 'PTC_REJECTED', message: 'drop: rejected: no' });
    assert.equal(invoked, []);
  });
});

test('the approval timeout ends an undecided call as PTC_APPROVAL_TIMEOUT', async () => {
  await withServer(async (client, invoked) => {
    const reply = await client.request('run', { runId: 't', program: `try { return await drop("db") } ${CAUGHT}`, tools: [{ name: 'drop' }], approval: ['drop'] });
    assert.equal(reply.result.value, { code: 'PTC_APPROVAL_TIMEOUT', message: 'drop: no decision within the approval timeout (approvalTimeoutMs 300 ms)' });
    assert.equal(invoked, []);
    assert.equal((await client.request('approve', { runId: 't', sequence: 1 })).result, { decided: false });
  }, { approval: { timeoutMs: 300 } });
});

test('Promise.all of gated calls: both wait at once and each is decided on its own', async () => {
  await withServer(async (client, invoked) => {
    const notes: Message[] = [];
    client.onNotification = (message) => {
      if (message.method !== 'approval') return;
      notes.push(message.params);
      if (notes.length < 2) return;
      for (const note of notes) void client.request(note.args[0] === 'a' ? 'approve' : 'reject', { runId: note.runId, sequence: note.sequence });
    };
    const reply = await client.request('run', { program: 'return await Promise.all(["a", "b"].map((x) => send(x).catch((e) => e.code)))', tools: [{ name: 'send' }], approval: ['send'] });
    assert.equal(reply.result.value, [{ done: 'a' }, 'PTC_REJECTED']);
    assert.equal(invoked, ['send(["a"])']);
  });
});

test('bad approval parameters are error replies naming the value', async () => {
  await withServer(async (client) => {
    const unknown = await client.request('run', { program: '1', tools: [{ name: 'send' }], approval: ['sned'] });
    assert.equal(unknown.error, { code: -32602, message: 'run: approval names "sned", which is not one of the run\'s tools' });
    const sequence = await client.request('approve', { runId: 'r', sequence: -1 });
    assert.equal(sequence.error, { code: -32602, message: 'approve: sequence must be a non-negative integer (0 is the program), got -1' });
    const extra = await client.request('approve', { runId: 'r', sequence: 1, reason: 'x' });
    assert.equal(extra.error.message, 'approve: unknown parameter "reason" (value \'x\'); approve takes runId, sequence, scope');
    const scope = await client.request('approve', { runId: 'r', sequence: 1, scope: 'forever' });
    assert.equal(scope.error.message, 'approve: scope must be "call", "run" or "owner", got \'forever\'');
  });
});

test.run();
