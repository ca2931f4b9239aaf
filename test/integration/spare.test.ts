// The spare carrier a runtime keeps booted ahead of its next run. Spawning one blocks the host's
// event loop for several milliseconds, so a replacement is not spawned while a run waits for its
// reply: it starts once the run that took the spare has delivered its result.
// launch: local only (the carriers must be this host's children, as the program sees its pid).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { childrenOf, createTestRuntime, waitUntil } from '../helpers/runtime.ts';

const pidOf = async (runtime: ReturnType<typeof createTestRuntime>, request: Record<string, unknown> = {}): Promise<number> => {
  const program = request.stateOwner === undefined ? 'return process.pid' : 'process.pid';
  const result = await runtime.run(runtime.resolve({ program, ...request }));
  assert.is(result.status, 'ok', JSON.stringify(result));
  return (result as { value: number }).value;
};
const liveChildren = (): number[] => childrenOf(process.pid).filter((child) => child.state !== 'Z').map((child) => child.pid);

for (const [mode, request, config] of [
  ['per-call', {}, {}],
  ['retained', { stateOwner: {} }, { executionMode: 'persistent-in-memory' as const }],
] as const) {
  test(`${mode}: the replacement spare is spawned after the run's result, and the next run gets it`, async () => {
    const runtime = createTestRuntime({ timeoutMs: 20_000, ...config });
    try {
      // The first spare exists before the first run.
      assert.ok(await waitUntil(() => liveChildren().length === 1, 10_000), `children: ${JSON.stringify(childrenOf(process.pid))}`);
      const [spare] = liveChildren();
      const first = await pidOf(runtime, request);
      assert.is(first, spare);
      // Right after the result: the taken carrier (ending, for per-call) and no replacement yet.
      assert.equal(liveChildren().filter((pid) => pid !== first), [], `children: ${JSON.stringify(childrenOf(process.pid))}`);
      await new Promise((resolve) => setImmediate(resolve));
      const replacement = liveChildren().filter((pid) => pid !== first);
      assert.is(replacement.length, 1, `children: ${JSON.stringify(childrenOf(process.pid))}`);
      // Another run (for per-call, a new one; for retained, a second owner's first) gets the replacement.
      assert.is(await pidOf(runtime, mode === 'retained' ? { stateOwner: {} } : {}), replacement[0]);
    } finally {
      await runtime.dispose();
    }
  });
}

test.run();
