// launch: source only (rollback and snippets are the host's journal; the carrier does nothing launch-specific in them)
// Audit and reuse with real carriers: a journaled run's calls are listed, rolled back newest
// first through each binding's revert (a revert that throws stops the rollback), and a program
// that worked is saved as a snippet that a later program calls with an input.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binding } from '../../host/index.ts';
import { createTestRuntime } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

async function withJournal(body: (runtime: ReturnType<typeof createTestRuntime>) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-audit-test-'));
  const runtime = createTestRuntime({ journal: join(dir, 'runs.db'), timeoutMs: 20_000 });
  try {
    await body(runtime);
  } finally {
    await runtime.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('revert rolls back applied calls newest first; reads are passed over; calls() shows them reverted', async () => {
  await withJournal(async (runtime) => {
    const world: string[] = [];
    const undone: string[] = [];
    const bindings = {
      issues: {
        create: binding(async (title: string) => (world.push(`issue ${title}`), { id: 7 }), { revert: async (result: any) => void undone.push(`delete issue ${result.id}`) }),
        label: binding(async (id: number, label: string) => (world.push(`label ${id} ${label}`), true), { revert: async (_result: unknown, args: unknown[]) => void undone.push(`unlabel ${args[0]} ${args[1]}`) }),
        list: async () => world.length,
      },
    };
    const result = await runtime.run(runtime.resolve({ program: 'const { id } = await issues.create("crash"); await issues.label(id, "bug"); return await issues.list()', bindings }));
    assert.is(valueOf(result), 2);
    const runId = result.runId!;
    assert.equal(runtime.runs().map((run) => [run.runId, run.status, run.attempts]), [[runId, 'ok', 1]]);
    assert.equal(runtime.calls(runId), [
      { sequence: 1, binding: 'issues.create', args: ['crash'], state: 'done', value: { id: 7 }, attempt: 1 },
      { sequence: 2, binding: 'issues.label', args: [7, 'bug'], state: 'done', value: true, attempt: 1 },
      { sequence: 3, binding: 'issues.list', args: [], state: 'done', value: 2, attempt: 1 },
    ]);
    const report = await runtime.revert(runId, { bindings });
    assert.equal(report, [
      { sequence: 3, binding: 'issues.list', reverted: false, reason: 'the binding has no revert' },
      { sequence: 2, binding: 'issues.label', reverted: true },
      { sequence: 1, binding: 'issues.create', reverted: true },
    ]);
    assert.equal(undone, ['unlabel 7 bug', 'delete issue 7']);
    assert.equal(runtime.calls(runId).map((call) => call.state), ['reverted', 'reverted', 'done']);
    // Nothing is reverted twice.
    assert.equal(await runtime.revert(runId, { bindings }), [{ sequence: 3, binding: 'issues.list', reverted: false, reason: 'the binding has no revert' }]);
  });
});

test('a revert that throws stops the rollback: older calls are not attempted and stay applied', async () => {
  await withJournal(async (runtime) => {
    const undone: number[] = [];
    const bindings = {
      put: binding(async (n: number) => n, { revert: async (result: unknown) => { if (result === 2) throw new Error('row 2 is locked'); undone.push(result as number); } }),
    };
    const result = await runtime.run(runtime.resolve({ program: 'for (let i = 1; i <= 3; i++) await put(i)', bindings }));
    const report = await runtime.revert(result.runId!, { bindings });
    assert.equal(report, [
      { sequence: 3, binding: 'put', reverted: true },
      { sequence: 2, binding: 'put', reverted: false, reason: 'its revert threw: row 2 is locked' },
      { sequence: 1, binding: 'put', reverted: false, reason: 'not attempted: the revert of call 2 failed' },
    ]);
    assert.equal(undone, [3]);
    assert.equal(runtime.calls(result.runId!).map((call) => call.state), ['done', 'done', 'reverted']);
  });
});

test('a program that worked is saved as a snippet; later programs call it with an input, and its calls are its own run', async () => {
  await withJournal(async (runtime) => {
    const bindings = { price: async (item: string) => ({ apple: 3, pear: 5 })[item] ?? 0 };
    const first = await runtime.run(runtime.resolve({
      program: 'const items = typeof input === "undefined" ? ["apple"] : input.items; let total = 0; for (const item of items) total += await price(item); return total',
      bindings,
    }));
    assert.is(valueOf(first), 3);
    assert.equal(runtime.saveSnippet('basketTotal', first.runId!, 'Sums the prices of input.items'), {
      name: 'basketTotal',
      program: runtime.runs()[0]!.program,
      description: 'Sums the prices of input.items',
    });
    assert.equal(runtime.snippets().map((snippet) => snippet.name), ['basketTotal']);
    const later = await runtime.run(runtime.resolve({ program: 'const a = await snippets.basketTotal({ items: ["apple", "pear", "pear"] }); return a * 2', bindings }));
    assert.is(valueOf(later), 26);
    // The snippet ran as a run of its own, journaled with its calls.
    const runs = runtime.runs();
    assert.is(runs.length, 3);
    const nested = runs.find((run) => run.runId !== first.runId && run.runId !== later.runId)!;
    assert.equal(runtime.calls(nested.runId).map((call) => call.args), [['apple'], ['pear'], ['pear']]);
    const failing = await runtime.run(runtime.resolve({ program: 'try { await snippets.basketTotal({ items: 5 }) } catch (e) { return [e.code, e.message] }', bindings }));
    assert.equal(valueOf(failing), ['PTC_SNIPPET_FAILED', 'snippet basketTotal failed (exception): items is not iterable']);
    assert.throws(() => runtime.saveSnippet('bad name', first.runId!), /name must be a JavaScript identifier .* got "bad name"/);
    const broken = await runtime.run(runtime.resolve({ program: 'throw new Error("no")', bindings }));
    assert.throws(() => runtime.saveSnippet('broken', broken.runId!), /did not finish ok \(status failed\); only a program that worked is saved/);
  });
});

test.run();
