// What a hostile carrier costs the host: for each fake-carrier scenario, the longest event-loop
// gap and the peak RSS growth of this process during one run. Reports only; not part of `npm run
// bench`'s ratios. Run: node test/bench/wire.ts [scenario ...]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRuntime } from '../../host/index.ts';

const root = new URL('../..', import.meta.url).pathname;
const fixture = pathToFileURL(join(root, 'test/fixtures/protocol/fake-carrier.mjs')).href;
const MiB = 1024 * 1024;
// Scenario, and maxMessageBytes large enough for what it sends.
const SCENARIOS: Array<[string, number]> = [
  ['flood-invokes', MiB],
  ['huge-output', 32 * MiB],
  ['huge-completion', 16 * MiB],
  ['deep-values', 4 * MiB],
];
const chosen = process.argv.length > 2 ? SCENARIOS.filter(([name]) => process.argv.includes(name)) : SCENARIOS;
const dir = mkdtempSync(join(tmpdir(), 'ptc-wire-bench-'));
try {
  for (const [scenario, maxMessageBytes] of chosen) {
    const wrapper = join(dir, `${scenario}.mjs`);
    writeFileSync(wrapper, `globalThis.scenario = ${JSON.stringify(scenario)};\nawait import(${JSON.stringify(fixture)});\n`);
    const runtime = createRuntime({
      launch: { kind: 'node-script', executable: join(root, 'node_modules/.bin/node'), bootstrapPath: wrapper },
      policy: { mode: 'full-access' },
      sandbox: { backend: 'none', require: 'none' },
      prestartCarrier: false,
      maxMessageBytes,
    });
    const before = process.memoryUsage().rss;
    let peak = before;
    let last = performance.now();
    let gap = 0;
    const sampler = setInterval(() => {
      const now = performance.now();
      gap = Math.max(gap, now - last);
      last = now;
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 2);
    const started = performance.now();
    const result = await runtime.run(runtime.resolve({ program: 'return 1', bindings: { tool: async () => 1, depth: async () => 1 }, timeoutMs: 60_000 }));
    const elapsed = performance.now() - started;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    await runtime.dispose();
    const outcome = result.status === 'ok' ? 'ok' : `${result.failure.kind}`;
    console.log(`${scenario.padEnd(16)} maxMessageBytes ${String(maxMessageBytes / MiB).padStart(2)} MiB  ${outcome.padEnd(9)} ${elapsed.toFixed(0).padStart(5)} ms  longest event-loop gap ${gap.toFixed(0).padStart(4)} ms  RSS +${((peak - before) / MiB).toFixed(0)} MiB`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
