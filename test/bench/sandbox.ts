// Confinement for `npm run bench`: the per-call latency of a confined run (the default policy,
// workspace-write, under the best backend here) against the same run unconfined (full-access).
import { createRuntime, type RuntimeConfig } from '../../host/index.ts';
import { interleave, median, ms, p90, pad, ratio } from './stats.ts';

/** Issue 16: confinement must not cost more than a fifth of an unconfined run. */
const TARGET = 1.2;

export async function sandboxed(): Promise<void> {
  console.log('\n8. per-call run() of `return 1`, confined vs unconfined (median / p90 of 30 after 3 warm-ups, interleaved)');
  const variants: Array<[string, RuntimeConfig]> = [
    ['unconfined (full-access)', { policy: { mode: 'full-access' } }],
    ['confined (workspace-write)', { policy: { mode: 'workspace-write' } }],
    ['confined, node-permission', { policy: { mode: 'workspace-write' }, sandbox: { backend: 'node-permission' } }],
  ];
  const runtimes = variants.map(([name, config]) => [name, createRuntime(config)] as const);
  try {
    const cases = Object.fromEntries(runtimes.map(([name, runtime]) => [name, async () => {
      const result = await runtime.run(runtime.resolve({ program: 'return 1' }));
      if (result.status !== 'ok') throw new Error(`${name}: ${result.failure.kind}: ${result.failure.message}`);
    }]));
    const samples = await interleave(cases);
    const floor = median(samples[variants[0]![0]]!);
    for (const [name] of variants) {
      const values = samples[name]!;
      const line = `${pad(name)}${ms(median(values))}${ms(p90(values))}`;
      if (name === variants[0]![0]) console.log(`${line}   (floor)`);
      else {
        const r = ratio(median(values), floor);
        console.log(`${line}   ratio ${r.toFixed(2).padStart(5)}  target ≤ ${TARGET}  ${r <= TARGET ? 'PASS' : 'MISS'}`);
      }
    }
    const backend = (await runtimes[1]![1].run(runtimes[1]![1].resolve({ program: 'return 1' }))).sandbox;
    console.log(`  (confined runs used backend ${backend.backend}, enforcement ${backend.enforcement})`);
  } finally {
    await Promise.all(runtimes.map(([, runtime]) => runtime.dispose()));
  }
}
