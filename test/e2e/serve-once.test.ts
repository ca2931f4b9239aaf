// Exactly-once tools and approvals that ask once through the built `ptc serve`: each invoke
// carries the call's context; a serve process killed with SIGKILL in the middle of an invoke is
// resumed by a new one, which asks the client to reconcile the call in doubt (its side effect
// happened once); an answer scoped to the run covers the tool's later calls; standing rules come
// with initialize's config; and `approveProgram` asks once for the whole program, as sequence 0.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';
import { ServeClient, type Message } from '../helpers/serve-client.ts';

const BIN = join(repoRoot, 'dist', 'ptc');

function serve(): ServeClient {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  return new ServeClient(BIN, ['serve']);
}

test('an invoke killed mid-call is reconciled by the client after a new serve resumes it: the side effect happened once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-serve-once-'));
  const config = { journal: join(dir, 'runs.db'), timeoutMs: 30_000, policy: { mode: 'full-access' } };
  const effects: string[] = [];
  const contexts: Message[] = [];
  try {
    const first = serve();
    await first.request('initialize', { protocolVersion: 1, config });
    const killed = new Promise<void>((resolve) => {
      first.onInvoke = (message) => {
        contexts.push(message.params.context);
        if (message.params.name === 'read') return first.send({ jsonrpc: '2.0', id: message.id, result: 'ok' });
        // The side effect happens, and the host dies before it hears of it.
        effects.push(`charged ${message.params.context.idempotencyKey}`);
        first.child.kill('SIGKILL');
        resolve();
      };
    });
    void first.request('run', { runId: 'pay-1', program: 'const before = await read(); return { before, receipt: await pay(42) }', tools: [{ name: 'read' }, { name: 'pay' }] });
    await killed;
    assert.is(await first.close(), null);
    assert.equal(contexts.map((context) => [context.runId, context.sequence, context.attempt]), [['pay-1', 1, 1], ['pay-1', 2, 1]]);
    assert.match(contexts[1].idempotencyKey, /^[0-9a-f]{32}$/);
    assert.is.not(contexts[0].idempotencyKey, contexts[1].idempotencyKey);

    const second = serve();
    try {
      await second.request('initialize', { protocolVersion: 1, config });
      const asked: Message[] = [];
      second.onInvoke = (message) => second.send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: `${message.params.name} must not run again` } });
      second.onNotification = (message) => {
        if (message.method !== 'reconcile') return;
        asked.push(message.params);
        const done = effects.includes(`charged ${message.params.context.idempotencyKey}`);
        second.send({ jsonrpc: '2.0', id: message.id, result: done ? { outcome: 'took-effect', value: { charged: 42 } } : { outcome: 'run-again' } });
      };
      const reply = await second.request('resume', { runId: 'pay-1', tools: [{ name: 'read' }, { name: 'pay' }], reconcile: ['pay'] });
      assert.equal(reply.result.value, { before: 'ok', receipt: { charged: 42 } });
      assert.equal(asked, [{ runId: 'pay-1', name: 'pay', args: [42], context: contexts[1] }]);
      assert.equal(effects.length, 1);
      const calls = (await second.request('calls', { runId: 'pay-1' })).result.calls;
      assert.equal(calls.map((call: Message) => [call.binding, call.state, call.reconciled]), [['read', 'done', undefined], ['pay', 'done', 'took-effect']]);
    } finally {
      assert.is(await second.close(), 0, second.stderr);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('approve with scope "run" covers the tool\'s later calls; rules from the config decide unasked; approveProgram asks once as sequence 0', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-serve-once-'));
  const client = serve();
  const notes: Message[] = [];
  try {
    await client.request('initialize', {
      protocolVersion: 1,
      config: {
        journal: join(dir, 'runs.db'),
        timeoutMs: 30_000,
        policy: { mode: 'full-access' },
        approval: { rules: [{ binding: 'drop', args: ['prod*'], decision: 'reject', reason: 'production is off limits' }] },
      },
    });
    client.onInvoke = (message) => client.send({ jsonrpc: '2.0', id: message.id, result: `${message.params.name} ${message.params.args[0]}` });
    client.onNotification = (message) => {
      if (message.method !== 'approval') return;
      notes.push(message.params);
      void client.request('approve', { runId: message.params.runId, sequence: message.params.sequence, scope: 'run' });
    };
    const scoped = await client.request('run', { runId: 'scoped', program: 'return [await send("a"), await send("b"), await send("c")]', tools: [{ name: 'send' }], approval: ['send'] });
    assert.equal(scoped.result.value, ['send a', 'send b', 'send c']);
    assert.equal(notes, [{ runId: 'scoped', sequence: 1, kind: 'call', name: 'send', args: ['a'] }]);
    const calls = (await client.request('calls', { runId: 'scoped' })).result.calls;
    assert.equal(calls.map((call: Message) => call.approval.by), ['person', 'earlier-answer', 'earlier-answer']);

    notes.length = 0;
    const ruled = await client.request('run', { runId: 'ruled', program: 'try { return await drop("prod-db") } catch (e) { return e.message }', tools: [{ name: 'drop' }], approval: ['drop'] });
    assert.equal(ruled.result.value, 'drop: rejected: production is off limits');
    assert.equal(notes, []);

    const whole = await client.request('run', {
      runId: 'whole',
      program: 'return [await store.put("x"), await store.put("y"), await store.get("x")]',
      tools: [{ name: 'store.put' }, { name: 'store.get' }, { name: 'mail.send' }],
      approval: ['store.put', 'mail.send'],
      approveProgram: true,
    });
    assert.equal(whole.result.value, ['store.put x', 'store.put y', 'store.get x']);
    assert.equal(notes, [{ runId: 'whole', sequence: 0, kind: 'program', program: 'return [await store.put("x"), await store.put("y"), await store.get("x")]', names: ['store.put'] }]);
  } finally {
    assert.is(await client.close(), 0, client.stderr);
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
