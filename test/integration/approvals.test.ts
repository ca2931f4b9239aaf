// Approval gates in real carriers: a gated call waits in place for the host's decision (approve
// runs it, reject and the approval timeout throw coded BindingErrors in the program), Promise.all
// of gated calls waits for each, and the run's deadline does not run while a person decides.
// launch: source only (test/run.ts runs it once): the gate, the decisions, the approval timeout,
// the withdrawal and the deadline are the host's, the same whatever starts the carrier, which sees
// a gated call as any binding call; bindings.test.ts runs per launch for that side (a call that
// waits, a coded BindingError, calls in flight together).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { binding, createRuntime, type PendingAction, type RunResult } from '../../host/index.ts';
import { createTestRuntime } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

const CAUGHT = 'catch (e) { return { caught: e instanceof BindingError, binding: e.binding, code: e.code, message: e.message } }';

/** A binding that counts its executions. */
function counted(): { fn: (...args: unknown[]) => Promise<unknown>; calls: unknown[][] } {
  const calls: unknown[][] = [];
  return { calls, fn: async (...args: unknown[]) => (calls.push(args), { sent: args[0] }) };
}

test('an approved call runs once, after the decision, and the action names binding, arguments, run and position', async () => {
  const send = counted();
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  const actions: PendingAction[] = [];
  try {
    const spec = runtime.resolve({
      program: 'const n = await count(); const r = await mail.send("ann@example.com", { subject: "hi" }); return { n, r }',
      bindings: { count: async () => 2, mail: { send: binding(send.fn, { approval: true }) } },
    });
    const result = await runtime.run(spec, {
      onApproval: (action) => {
        actions.push(action);
        assert.equal(send.calls, [], 'the gated call has not run before the decision');
        setTimeout(() => assert.ok(action.approve()), 50);
      },
    });
    assert.equal(valueOf(result), { n: 2, r: { sent: 'ann@example.com' } });
    assert.equal(send.calls, [['ann@example.com', { subject: 'hi' }]]);
    assert.is(actions.length, 1);
    const [action] = actions;
    assert.equal({ binding: action!.binding, args: action!.args, sequence: action!.sequence }, { binding: 'mail.send', args: ['ann@example.com', { subject: 'hi' }], sequence: 2 });
    assert.match(action!.runId, /^[0-9a-f-]{36}$/);
  } finally {
    await runtime.dispose();
  }
});

test('a rejected call throws BindingError PTC_REJECTED with the reason, and never runs', async () => {
  const drop = counted();
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const spec = runtime.resolve({ program: `try { return await drop("prod") } ${CAUGHT}`, bindings: { drop: binding(drop.fn, { approval: true }) } });
    const result = await runtime.run(spec, { onApproval: (action) => action.reject('not on a Friday') });
    assert.equal(valueOf(result), { caught: true, binding: 'drop', code: 'PTC_REJECTED', message: 'drop: rejected: not on a Friday' });
    assert.equal(drop.calls, []);
    // A handler may return its decision instead of calling approve()/reject().
    const returned = await runtime.run(spec, { onApproval: async () => false });
    assert.equal(valueOf(returned), { caught: true, binding: 'drop', code: 'PTC_REJECTED', message: 'drop: rejected' });
    const approved = await runtime.run(spec, { onApproval: async () => ({ approved: true }) });
    assert.equal(valueOf(approved), { sent: 'prod' });
    // No handler: nobody can approve, so the call is rejected at once.
    const unasked = await runtime.run(spec);
    assert.equal(valueOf(unasked), { caught: true, binding: 'drop', code: 'PTC_REJECTED', message: 'drop requires approval, and this run has no approval handler to ask' });
    assert.equal(drop.calls, [['prod']]);
  } finally {
    await runtime.dispose();
  }
});

test('a call nobody decides ends at the approval timeout as PTC_APPROVAL_TIMEOUT, and the program goes on', async () => {
  const drop = counted();
  const runtime = createTestRuntime({ timeoutMs: 20_000, approval: { timeoutMs: 300 } });
  let asked = 0;
  try {
    const spec = runtime.resolve({ program: `try { await drop(1) } ${CAUGHT}`, bindings: { drop: binding(drop.fn, { approval: true }) } });
    const result = await runtime.run(spec, { onApproval: () => void asked++ });
    assert.equal(valueOf(result), { caught: true, binding: 'drop', code: 'PTC_APPROVAL_TIMEOUT', message: 'drop: no decision within the approval timeout (approvalTimeoutMs 300 ms)' });
    assert.is(asked, 1);
    assert.equal(drop.calls, []);
  } finally {
    await runtime.dispose();
  }
});

test('Promise.all of gated calls: each is pending at once, each decision is its own', async () => {
  const del = counted();
  const runtime = createTestRuntime({ timeoutMs: 20_000, approval: { required: ({ binding: name, args }) => name === 'del' && args[0] !== 'tmp' } });
  const pending: PendingAction[] = [];
  try {
    const spec = runtime.resolve({
      program: `return await Promise.all(["a", "tmp", "b"].map((x) => del(x).catch((e) => e.code)))`,
      bindings: { del: del.fn },
    });
    const result = await runtime.run(spec, {
      onApproval: (action) => {
        pending.push(action);
        // Decide only once both gated calls wait: they are in flight together.
        if (pending.length === 2) {
          pending.find((p) => p.args[0] === 'a')!.approve();
          pending.find((p) => p.args[0] === 'b')!.reject();
        }
      },
    });
    assert.equal(valueOf(result), [{ sent: 'a' }, { sent: 'tmp' }, 'PTC_REJECTED']);
    assert.equal(del.calls.map((args) => args[0]).sort(), ['a', 'tmp']);
    assert.equal(pending.map((p) => p.sequence).sort(), [1, 3]);
  } finally {
    await runtime.dispose();
  }
});

// The deadline is the host's, the same for every launch, and this test waits seconds: it runs once,
// from source (over ssh, start-up alone can outlast a deadline short enough for it).
// Issue 33 §2: the reference's rule ("including time awaiting nested tools or approval"), for a caller who wants it.
test('approval.deadline "running": the deadline keeps running while a call waits for a person, as the reference has it', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000, approval: { deadline: 'running' } });
  try {
    const spec = runtime.resolve({
      program: 'const r = await ask(); return r',
      bindings: { ask: binding(async () => 'yes', { approval: true }) },
      timeoutMs: 1_500,
    });
    let asked = false;
    const result = await runtime.run(spec, {
      onApproval: (action) => {
        asked = true;
        // Longer than the run's whole deadline: the decision comes too late.
        setTimeout(() => action.approve(), 4_000);
      },
    });
    assert.ok(asked);
    assert.is(result.status, 'failed');
    const failure = (result as Extract<RunResult, { status: 'failed' }>).failure;
    assert.equal({ kind: failure.kind, timeoutMs: failure.timeoutMs }, { kind: 'timeout', timeoutMs: 1_500 });
  } finally {
    await runtime.dispose();
  }
});

test('approval.deadline takes "paused" or "running" and names anything else', () => {
  assert.throws(() => createTestRuntime({ approval: { deadline: 'sometimes' as 'paused' } }), (error: Error) => error.message === 'ptc config: approval.deadline must be "paused" or "running", got \'sometimes\'');
});

([undefined, '', 'source'].includes(process.env.PTC_TEST_LAUNCH) ? test : test.skip)('the deadline does not run while a call waits for a person, and runs again after', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const spec = runtime.resolve({
      program: 'const r = await ask(); await new Promise((resolve) => setTimeout(resolve, 60_000)); return r',
      bindings: { ask: binding(async () => 'yes', { approval: true }) },
      timeoutMs: 3_000,
    });
    let decidedAt = 0;
    const result = await runtime.run(spec, {
      onApproval: (action) => {
        // Longer than the run's whole deadline spent waiting for the person.
        setTimeout(() => {
          decidedAt = performance.now();
          action.approve();
        }, 4_000);
      },
    });
    assert.is(result.status, 'failed');
    const failure = (result as Extract<RunResult, { status: 'failed' }>).failure;
    assert.equal({ kind: failure.kind, timeoutMs: failure.timeoutMs, message: failure.message }, { kind: 'timeout', timeoutMs: 3_000, message: 'execution timed out during execution (deadline 3000 ms elapsed)' });
    assert.ok(decidedAt > 0, 'the timeout came after the decision, from the time the run spent after it');
  } finally {
    await runtime.dispose();
  }
});

test('a run that ends while a call waits withdraws it: a late approve() runs nothing', async () => {
  const drop = counted();
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const controller = new AbortController();
    let late: PendingAction | undefined;
    const spec = runtime.resolve({ program: 'await drop(1)', bindings: { drop: binding(drop.fn, { approval: true }) } });
    const result = await runtime.run(spec, { signal: controller.signal, onApproval: (action) => ((late = action), controller.abort(new Error('user left'))) });
    assert.is(result.status === 'failed' && result.failure.kind, 'abort');
    assert.is(await late!.outcome, 'withdrawn');
    assert.is(late!.approve(), false);
    assert.equal(drop.calls, []);
  } finally {
    await runtime.dispose();
  }
});

test('configuration: approval fields are checked, and executionMode "durable" is refused, naming the journal', () => {
  assert.throws(() => createRuntime({ approval: { timeoutMs: 0 } }), /approval\.timeoutMs must be a positive integer .* got 0/);
  assert.throws(() => createRuntime({ approval: { required: 'yes' as never } }), /approval\.required must be a function .* got 'yes'/);
  assert.throws(() => createRuntime({ approval: { ask: true } as never }), /approval: unknown field "ask"/);
  assert.throws(() => createRuntime({ executionMode: 'durable' as never }), /executionMode "durable" is not a mode here: durable runs are per-call runs with a `journal`/);
  assert.throws(() => binding((() => {}) as never, { approval: 'yes' as never }), /approval must be a boolean, got 'yes'/);
});

test.run();
