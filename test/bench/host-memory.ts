// Section 13 of `npm run bench` (only with --long: it takes minutes): whether the host holds on
// to memory across many per-call runs. The RSS after the first 1,000 runs is the baseline (by then
// code is compiled and pools have grown); the growth to 10,000 runs is what would keep growing.
import { performance } from 'node:perf_hooks';
import { createRuntime } from '../../host/index.ts';
import { judge, pad } from './stats.ts';

const BASELINE_RUNS = 1_000;
const TOTAL_RUNS = 10_000;

const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MB`;

export async function hostMemory(): Promise<void> {
  console.log(`\n13. host RSS growth over ${TOTAL_RUNS.toLocaleString('en-US')} per-call run() of \`return 1\` (source carrier, default policy, spare prestarted), from run ${BASELINE_RUNS.toLocaleString('en-US')} to the last`);
  const runtime = createRuntime({});
  const started = performance.now();
  let baseline: NodeJS.MemoryUsage | undefined;
  try {
    for (let i = 1; i <= TOTAL_RUNS; i++) {
      const result = await runtime.run(runtime.resolve({ program: 'return 1' }));
      if (result.status !== 'ok' || result.value !== 1) throw new Error(`run ${i} did not return 1: ${JSON.stringify(result)}`);
      if (i === BASELINE_RUNS) baseline = process.memoryUsage();
      // Every 1,000 runs: the trend so far, so that an interrupted run still tells something.
      if (i % 1_000 === 0) {
        const { rss } = process.memoryUsage();
        console.log(`${pad(`after ${i.toLocaleString('en-US')} runs`)}RSS ${mb(rss)}, ${(((rss / baseline!.rss) - 1) * 100).toFixed(1)} % since run ${BASELINE_RUNS.toLocaleString('en-US')} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
      }
    }
  } finally {
    await runtime.dispose();
  }
  const end = process.memoryUsage();
  const from = baseline!;
  // Where the growth is: the JS heap, memory outside it that JS objects own (buffers), or the rest (native).
  const parts = (['heapUsed', 'external', 'arrayBuffers'] as const).map((key) => `${key} ${mb(from[key])} -> ${mb(end[key])}`).join(', ');
  console.log(`${pad(`RSS run ${BASELINE_RUNS.toLocaleString('en-US')} -> ${TOTAL_RUNS.toLocaleString('en-US')}`)}${mb(from.rss)} -> ${mb(end.rss)}; ${parts}`);
  const growth = end.rss / from.rss - 1;
  const row = { row: 'e', what: `host RSS growth, ${BASELINE_RUNS / 1000}k -> ${TOTAL_RUNS / 1000}k per-call runs`, figure: mb(end.rss), floor: mb(from.rss) };
  // The target is growth < 5 %: the ratio end / baseline must stay under 1.05.
  console.log(`${pad('growth')}${(growth * 100).toFixed(1)} %   ${judge(end.rss / from.rss, { max: 1.05 }, row)}`);
}
