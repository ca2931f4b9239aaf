// launch: source only (the call context, reconcile, approval scopes, rules and the program's approval are the host's; the carrier sees each as any binding call)
// Exactly-once tools and approvals that ask once, through real carriers: a host process killed
// with SIGKILL in the middle of a binding call is resumed here, and the call's binding reconcile
// says whether it took effect (its side effect is counted in a file: once), should run again, or
// fails; each call has a context with a stable idempotency key; an answer scoped to the run or
// the state owner covers later calls; standing rules decide without asking; a whole program is
// approved once, listing the gated bindings it reaches; and calls() shows every decision.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binding, callContext, type CallContext, type PendingAction, type PendingProgram, type ReconcileContext } from '../../host/index.ts';
import { createTestRuntime, repoRoot } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

const HOST = join(repoRoot, 'test/fixtures/journal/once-host.ts');
const CAUGHT = 'catch (e) { return { code: e.code, message: e.message } }';

function scratch(): { journal: string; effects: string; done(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-once-test-'));
  return { journal: join(dir, 'runs.db'), effects: join(dir, 'effects'), done: () => rmSync(dir, { recursive: true, force: true }) };
}

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

/** Starts the host fixture and SIGKILLs it once a whole line of its output is `until` or starts with it and a space; resolves with that output. */
function runAndKill(place: { journal: string; effects: string }, program: string, mode: 'after-effect' | 'before-effect', until: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HOST, place.journal, program, place.effects, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let killed = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (!killed && out.split('\n').slice(0, -1).some((line) => line === until || line.startsWith(`${until} `))) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(out) : reject(new Error(`the host exited with ${code} before the kill: ${out}${err}`))));
  });
}

function inCall(out: string): { runId: string; sequence: number; attempt: number; key: string } {
  const match = /^in-call (\S+) (\d+) (\d+) (\S+)$/m.exec(out)!;
  return { runId: match[1]!, sequence: Number(match[2]), attempt: Number(match[3]), key: match[4]! };
}

/** The resumed side of pay.charge: charges once per key, counting in the effects file. */
function payment(effects: string, reconcile?: (context: ReconcileContext) => unknown) {
  const contexts: CallContext[] = [];
  const charge = async (amount: number) => {
    const context = callContext()!;
    contexts.push(context);
    appendFileSync(effects, `charged ${context.idempotencyKey} ${amount}\n`);
    return { charged: amount, key: context.idempotencyKey };
  };
  return { contexts, charge: reconcile === undefined ? charge : binding(charge, { reconcile: reconcile as never }) };
}

const PROGRAM = 'const before = await read(); const receipt = await pay.charge(42); return { before, receipt }';

test('a call killed after its side effect is reconciled as took-effect: the effect happened once, the program gets the value', async () => {
  const place = scratch();
  try {
    const out = await runAndKill(place, PROGRAM, 'after-effect', 'effect');
    const killed = inCall(out);
    assert.equal([killed.sequence, killed.attempt], [2, 1]);
    assert.equal(lines(place.effects), [`charged ${killed.key} 42`]);
    const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
    try {
      assert.equal(runtime.calls(killed.runId).map((call) => [call.sequence, call.state]), [[1, 'done'], [2, 'started']]);
      const asked: ReconcileContext[] = [];
      const pay = payment(place.effects, (context) => {
        asked.push(context);
        const found = lines(place.effects).find((line) => line.startsWith(`charged ${context.idempotencyKey} `));
        return found === undefined ? { outcome: 'run-again' } : { outcome: 'took-effect', value: { charged: Number(found.split(' ')[2]), key: context.idempotencyKey } };
      });
      const result = await runtime.resume(killed.runId, { bindings: { pay: { charge: pay.charge }, read: async () => 'ok' } });
      assert.equal(valueOf(result), { before: 'ok', receipt: { charged: 42, key: killed.key } });
      assert.equal(lines(place.effects), [`charged ${killed.key} 42`], 'the side effect happened exactly once');
      assert.is(pay.contexts.length, 0, 'the binding did not run again');
      assert.equal(asked.map(({ runId, binding: name, sequence, attempt, idempotencyKey, args }) => ({ runId, name, sequence, attempt, idempotencyKey, args })), [
        { runId: killed.runId, name: 'pay.charge', sequence: 2, attempt: 1, idempotencyKey: killed.key, args: [42] },
      ]);
      const call = runtime.calls(killed.runId)[1]!;
      assert.equal({ state: call.state, value: call.value, reconciled: call.reconciled }, { state: 'done', value: { charged: 42, key: killed.key }, reconciled: 'took-effect' });
    } finally {
      await runtime.dispose();
    }
  } finally {
    place.done();
  }
});

test('a call killed before its side effect is reconciled as run-again: it runs once more, attempt 2, with the same idempotency key', async () => {
  const place = scratch();
  try {
    const killed = inCall(await runAndKill(place, PROGRAM, 'before-effect', 'in-call'));
    assert.equal(lines(place.effects), []);
    const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
    try {
      const pay = payment(place.effects, (context) => (lines(place.effects).some((line) => line.includes(context.idempotencyKey)) ? { outcome: 'took-effect' } : { outcome: 'run-again' }));
      const result = await runtime.resume(killed.runId, { bindings: { pay: { charge: pay.charge }, read: async () => 'ok' } });
      assert.equal(valueOf(result), { before: 'ok', receipt: { charged: 42, key: killed.key } });
      assert.equal(lines(place.effects), [`charged ${killed.key} 42`]);
      assert.equal(pay.contexts.map(({ sequence, attempt, idempotencyKey }) => ({ sequence, attempt, idempotencyKey })), [{ sequence: 2, attempt: 2, idempotencyKey: killed.key }]);
      const call = runtime.calls(killed.runId)[1]!;
      assert.equal({ state: call.state, attempt: call.attempt, reconciled: call.reconciled }, { state: 'done', attempt: 2, reconciled: 'run-again' });
    } finally {
      await runtime.dispose();
    }
  } finally {
    place.done();
  }
});

test('a reconcile that answers fail makes the call throw PTC_RECONCILE_FAILED with its reason; the binding does not run', async () => {
  const place = scratch();
  try {
    const program = `try { await pay.charge(42); return 'charged' } ${CAUGHT}`;
    const killed = inCall(await runAndKill(place, program, 'before-effect', 'in-call'));
    const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
    try {
      const pay = payment(place.effects, () => ({ outcome: 'fail', reason: 'the ledger is unreachable; check by hand' }));
      const result = await runtime.resume(killed.runId, { bindings: { pay: { charge: pay.charge }, read: async () => 'ok' } });
      assert.equal(valueOf(result), { code: 'PTC_RECONCILE_FAILED', message: 'pay.charge: the call was in doubt after a crash, and its reconcile failed it: the ledger is unreachable; check by hand' });
      assert.is(pay.contexts.length, 0);
      assert.equal(lines(place.effects), []);
      const call = runtime.calls(killed.runId)[0]!;
      assert.equal({ state: call.state, reconciled: call.reconciled, reason: call.reason }, { state: 'failed', reconciled: 'fail', reason: 'the ledger is unreachable; check by hand' });
    } finally {
      await runtime.dispose();
    }
  } finally {
    place.done();
  }
});

test('each call has its own context: run id, sequence, attempt 1 and a key that differs between calls and runs', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const seen: CallContext[] = [];
    const note = async () => (seen.push(callContext()!), callContext()!.idempotencyKey);
    const spec = runtime.resolve({ program: 'return [await note(), await note()]', bindings: { note } });
    const first = await runtime.run(spec, { runId: 'run-a' });
    const second = await runtime.run(spec, { runId: 'run-b' });
    assert.equal(seen.map(({ runId, binding: name, sequence, attempt }) => [runId, name, sequence, attempt]), [['run-a', 'note', 1, 1], ['run-a', 'note', 2, 1], ['run-b', 'note', 1, 1], ['run-b', 'note', 2, 1]]);
    const keys = [...(valueOf(first) as string[]), ...(valueOf(second) as string[])];
    assert.is(new Set(keys).size, 4);
    for (const key of keys) assert.match(key, /^[0-9a-f]{32}$/);
    assert.is(callContext(), undefined, 'outside a call there is no context');
  } finally {
    await runtime.dispose();
  }
});

/** A gated binding that counts its calls. */
function gatedSend() {
  const sent: unknown[] = [];
  return { sent, send: binding(async (to: unknown) => (sent.push(to), 'sent'), { approval: true }) };
}

test('an answer scoped to the run approves its next two gated calls, not the next run\'s; the journal records each decision', async () => {
  const place = scratch();
  const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
  try {
    const mail = gatedSend();
    const asked: PendingAction[] = [];
    const onApproval = (action: PendingAction) => void (asked.push(action), action.approve({ scope: 'run' }));
    const spec = runtime.resolve({ program: 'return [await send("a"), await send("b"), await send("c")]', bindings: { send: mail.send } });
    const first = await runtime.run(spec, { runId: 'first', onApproval });
    assert.equal(valueOf(first), ['sent', 'sent', 'sent']);
    assert.equal(asked.map((action) => [action.runId, action.sequence]), [['first', 1]], 'one question for three calls');
    const second = await runtime.run(runtime.resolve({ program: 'return await send("d")', bindings: { send: mail.send } }), { runId: 'second', onApproval });
    assert.equal(valueOf(second), 'sent');
    assert.equal(asked.map((action) => [action.runId, action.sequence]), [['first', 1], ['second', 1]], 'the next run is asked again');
    assert.equal(mail.sent, ['a', 'b', 'c', 'd']);
    assert.equal(runtime.calls('first').map((call) => [call.sequence, call.state, call.approval]), [
      [1, 'done', { decision: 'approved', by: 'person', scope: 'run' }],
      [2, 'done', { decision: 'approved', by: 'earlier-answer', scope: 'run', runId: 'first', sequence: 1 }],
      [3, 'done', { decision: 'approved', by: 'earlier-answer', scope: 'run', runId: 'first', sequence: 1 }],
    ]);
  } finally {
    await runtime.dispose();
    place.done();
  }
});

test('a rejection scoped to the run rejects the binding\'s later calls without asking', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const mail = gatedSend();
    let asked = 0;
    const spec = runtime.resolve({ program: `const out = []; for (const to of ["a", "b"]) { try { out.push(await send(to)) } catch (e) { out.push(e.message) } } return out`, bindings: { send: mail.send } });
    const result = await runtime.run(spec, { onApproval: () => (asked++, { approved: false, reason: 'not today', scope: 'run' }) });
    assert.equal(valueOf(result), ['send: rejected: not today', 'send: rejected: not today (an answer for the run at call 1)']);
    assert.is(asked, 1);
    assert.equal(mail.sent, []);
  } finally {
    await runtime.dispose();
  }
});

test('an answer scoped to the state owner covers that conversation\'s later runs, not another owner\'s', async () => {
  const runtime = createTestRuntime({ timeoutMs: 20_000 });
  try {
    const mail = gatedSend();
    const asked: string[] = [];
    const ann = { conversation: 'ann' };
    const bob = { conversation: 'bob' };
    const run = (owner: object, name: string) =>
      runtime.run(runtime.resolve({ program: 'return await send("x")', bindings: { send: mail.send }, stateOwner: owner }), {
        onApproval: (action) => (asked.push(name), { approved: true, scope: 'owner' }),
      });
    for (const [owner, name] of [[ann, 'ann 1'], [ann, 'ann 2'], [bob, 'bob 1'], [ann, 'ann 3']] as const) assert.equal(valueOf(await run(owner, name)), 'sent');
    assert.equal(asked, ['ann 1', 'bob 1']);
    assert.is(mail.sent.length, 4);
  } finally {
    await runtime.dispose();
  }
});

test('standing rules: an approve rule lets matching gated calls run unasked, a reject rule stops any call it matches, and calls() names the rule', async () => {
  const place = scratch();
  const runtime = createTestRuntime({
    journal: place.journal,
    timeoutMs: 20_000,
    approval: {
      rules: [
        { binding: 'git.deleteBranch', args: ['main'], decision: 'reject', reason: 'main is protected' },
        { binding: 'git.deleteBranch', args: ['feature/*'], decision: 'approve' },
        { binding: 'git.push', args: [{ force: true }], decision: 'reject' },
      ],
    },
  });
  try {
    const done: string[] = [];
    const asked: string[] = [];
    const bindings = {
      git: {
        deleteBranch: binding(async (name: string) => (done.push(`delete ${name}`), name), { approval: true }),
        push: async (options: object) => (done.push(`push ${JSON.stringify(options)}`), 'pushed'),
      },
    };
    const program = `const out = [];
      for (const call of [() => git.deleteBranch("feature/a"), () => git.deleteBranch("main"), () => git.deleteBranch("release"), () => git.push({ force: true, remote: "origin" }), () => git.push({ force: false })]) {
        try { out.push(await call()) } catch (e) { out.push(e.code + ": " + e.message) }
      }
      return out`;
    const result = await runtime.run(runtime.resolve({ program, bindings }), { runId: 'rules', onApproval: (action) => (asked.push(`${action.binding}(${action.args[0]})`), false) });
    assert.equal(valueOf(result), [
      'feature/a',
      'PTC_REJECTED: git.deleteBranch: rejected: main is protected',
      'PTC_REJECTED: git.deleteBranch: rejected',
      'PTC_REJECTED: git.push: rejected: approval rule 2 rejects this call',
      'pushed',
    ]);
    assert.equal(asked, ['git.deleteBranch(release)'], 'only the call no rule matched was asked about');
    assert.equal(done, ['delete feature/a', 'push {"force":false}']);
    assert.equal(runtime.calls('rules').map((call) => [call.state, call.approval]), [
      ['done', { decision: 'approved', by: 'rule', scope: 'call', rule: 1 }],
      ['rejected', { decision: 'rejected', by: 'rule', scope: 'call', rule: 0, reason: 'main is protected' }],
      ['rejected', { decision: 'rejected', by: 'person', scope: 'call' }],
      ['rejected', { decision: 'rejected', by: 'rule', scope: 'call', rule: 2, reason: 'approval rule 2 rejects this call' }],
      ['done', undefined],
    ]);
  } finally {
    await runtime.dispose();
    place.done();
  }
});

test('a whole program is approved once before it runs: the person sees the gated bindings it reaches, and its calls are not asked about', async () => {
  const place = scratch();
  const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
  try {
    const done: string[] = [];
    const gated = (name: string) => binding(async (arg: unknown) => (done.push(`${name} ${arg}`), name), { approval: true });
    const bindings = { git: { deleteBranch: gated('deleteBranch'), push: gated('push'), staleBranches: async () => ['a', 'b'] }, mail: { send: gated('send') } };
    const program = 'const stale = await git.staleBranches(); for (const b of stale) await git.deleteBranch(b); return stale.length';
    const programs: PendingProgram[] = [];
    const calls: PendingAction[] = [];
    const result = await runtime.run(runtime.resolve({ program, bindings }), {
      runId: 'whole',
      onProgramApproval: (action) => (programs.push(action), true),
      onApproval: (action) => (calls.push(action), false),
    });
    assert.equal(valueOf(result), 2);
    assert.equal(programs.map((action) => ({ runId: action.runId, program: action.program, bindings: action.bindings })), [{ runId: 'whole', program, bindings: ['git.deleteBranch'] }]);
    assert.is(calls.length, 0);
    assert.equal(done, ['deleteBranch a', 'deleteBranch b']);
    assert.equal(runtime.calls('whole').map((call) => [call.sequence, call.binding, call.args, call.state, call.approval?.by, call.approval?.sequence]), [
      [0, 'program', ['git.deleteBranch'], 'done', 'person', undefined],
      [1, 'git.staleBranches', [], 'done', undefined, undefined],
      [2, 'git.deleteBranch', ['a'], 'done', 'earlier-answer', 0],
      [3, 'git.deleteBranch', ['b'], 'done', 'earlier-answer', 0],
    ]);

    // Reached dynamically, every gated binding is listed.
    const listed: string[][] = [];
    await runtime.run(runtime.resolve({ program: 'const name = "send"; return await mail[name]("x")', bindings }), { onProgramApproval: (action) => (listed.push(action.bindings), true) });
    await runtime.run(runtime.resolve({ program: 'return await globalThis["git"].push("x")', bindings }), { onProgramApproval: (action) => (listed.push(action.bindings), true) });
    assert.equal(listed, [['mail.send'], ['git.deleteBranch', 'git.push', 'mail.send']]);

    // A rejected program never starts; one that reaches no gated binding is not asked about.
    const rejected = await runtime.run(runtime.resolve({ program, bindings }), { runId: 'refused', onProgramApproval: () => ({ approved: false, reason: 'too broad' }) });
    assert.equal(rejected.status === 'failed' && rejected.failure, { kind: 'rejected', message: 'the program: rejected: too broad', code: 'PTC_REJECTED' });
    assert.equal(rejected.output, []);
    assert.equal(runtime.runs().find((run) => run.runId === 'refused')!.status, 'failed');
    let asked = 0;
    const quiet = await runtime.run(runtime.resolve({ program: 'return (await git.staleBranches()).length', bindings }), { onProgramApproval: () => (asked++, false) });
    assert.equal([valueOf(quiet), asked], [2, 0]);
    assert.equal(done, ['deleteBranch a', 'deleteBranch b', 'send x', 'push x']);
  } finally {
    await runtime.dispose();
    place.done();
  }
});

test.run();
