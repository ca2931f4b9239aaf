// Where a run's CPU budget starts: at the carrier's `started` notice (the run's own code), so the
// carrier's set-up for the run is free; and, for a carrier that never says so, SET_UP_ALLOWANCE_MS
// after the run was sent, so the notice cannot buy unlimited CPU. Driven on a real child process
// that spends exact amounts of CPU time (its own process.cpuUsage) and says when it does.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ResourceGuard, SET_UP_ALLOWANCE_MS } from '../../../../supervision/resources/guard.ts';

/** A child that burns `before` ms of CPU, prints "started", burns `after` ms, prints "done", and waits for stdin to end. */
function burner(before: number, after: number) {
  const burn = (ms: number) => `{ const s = process.cpuUsage(); for (;;) { const u = process.cpuUsage(s); if ((u.user + u.system) / 1000 >= ${ms}) break; } }`;
  const source = `${burn(before)} process.stdout.write('started\\n'); ${burn(after)} process.stdout.write('done\\n'); process.stdin.resume();`;
  return spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'inherit'] });
}

/** Watches the child from its spawn with `budget`; calls started() when it says "started" (if `notice`); returns the overrun, if any, once it says "done". */
async function watchBurner(before: number, after: number, budget: number, notice: boolean) {
  const child = burner(before, after);
  const guard = new ResourceGuard(child.pid, { maxMemoryMb: null, maxDiskMb: null, writable: [] }, () => {});
  let overrun: { usedMs: number; budgetMs: number } | undefined;
  const watch = guard.watch(budget, (over) => (overrun = over));
  let text = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    if (!text.includes('started') && (text + chunk).includes('started') && notice) watch.started!();
    text += chunk;
  });
  try {
    while (!text.includes('done')) await once(child.stdout, 'data');
    overrun ??= watch.check();
    watch.stop();
  } finally {
    child.stdin.end();
    child.kill();
    guard.release();
  }
  return overrun;
}

test('CPU spent before the started notice is not charged; CPU after it is', async () => {
  // 250 ms of set-up against a budget of 80: only the 20 ms after the notice count.
  assert.is(await watchBurner(250, 20, 80, true), undefined);
  const over = await watchBurner(20, 250, 80, true);
  assert.ok(over !== undefined && over.budgetMs === 80 && over.usedMs > 80, JSON.stringify(over));
});

test('without a started notice, the set-up past SET_UP_ALLOWANCE_MS is charged', async () => {
  assert.is(await watchBurner(250, 20, 80, false), undefined);
  const over = await watchBurner(SET_UP_ALLOWANCE_MS + 250, 0, 80, false);
  assert.ok(over !== undefined && over.usedMs > 80, JSON.stringify(over));
});

test('the last look counts at least what the carrier reports it spent since its notice, read however late', async () => {
  // The host read the notice only after the 250 ms were spent (a loaded host's event loop): by
  // its own count nothing was charged; the carrier's count (RunOutcome.cpuMs) is 250 ms.
  const child = burner(0, 250);
  const guard = new ResourceGuard(child.pid, { maxMemoryMb: null, maxDiskMb: null, writable: [] }, () => {});
  try {
    let text = '';
    child.stdout.setEncoding('utf8');
    while (!text.includes('done')) text += (await once(child.stdout, 'data'))[0];
    const late = guard.watch(80, () => {});
    late.started!();
    assert.is(late.check(), undefined, 'by the host\'s own late reading, nothing was spent');
    late.stop();
    const reported = guard.watch(80, () => {});
    reported.started!();
    const over = reported.check(250);
    assert.ok(over !== undefined && over.budgetMs === 80 && over.usedMs === 250, JSON.stringify(over));
    reported.stop();
  } finally {
    child.stdin.end();
    child.kill();
    guard.release();
  }
});

test.run();
