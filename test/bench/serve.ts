// `ptc serve` driven from Python for `npm run bench`: a warm server's run of `return 1`, and
// sequential binding calls, each against a raw stdio JSON-line ping-pong between a Python and a
// Node process (the floor). The measuring happens in serve_driver.py; this prints the figures.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ms, pad } from './stats.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'ptc');
const PYTHON = '/usr/bin/python3';

interface Figures {
  rawMs: number;
  runMs: number;
  rawP90Ms: number;
  runP90Ms: number;
  retainedMs: number;
  retainedP90Ms: number;
  rawRate: number;
  ptcRate: number;
  sizes: { raw: number; ptc: number };
}

const verdict = (value: number, pass: boolean, goal: string): string => `ratio ${value.toFixed(2).padStart(5)}  target ${goal}  ${pass ? 'PASS' : 'MISS'}`;
const rate = (value: number): string => `${Math.round(value).toLocaleString('en-US')} /s`.padStart(10);

/** 9 and 10: the Python client through a warm `ptc serve` against a raw stdio ping-pong. */
export async function served(): Promise<void> {
  console.log('\n11. Python client: a `run` on a warm `ptc serve` (`1` for a retained owner, `return 1` per-call) vs a raw stdio JSON-line ping-pong Python <-> Node (median / p90 of 30)');
  if (!existsSync(BIN)) return console.log('  skipped: dist/ptc is missing (npm run build)');
  if (!existsSync(PYTHON)) return console.log(`  skipped: ${PYTHON} is missing`);
  const { stdout } = await promisify(execFile)(PYTHON, [join(import.meta.dirname, 'serve_driver.py'), BIN, process.execPath, join(ROOT, 'clients', 'python', 'src')], { maxBuffer: 1 << 20 });
  const figures = JSON.parse(stdout) as Figures;
  const warm = figures.retainedMs / figures.rawMs;
  console.log(`${pad('floor: raw ping-pong')}${ms(figures.rawMs, 3)}${ms(figures.rawP90Ms, 3)}`);
  console.log(`${pad('run, retained owner')}${ms(figures.retainedMs, 3)}${ms(figures.retainedP90Ms, 3)}   ${verdict(warm, warm <= 3, '≤ 3')}`);
  // per-call starts a fresh carrier for every run (from the spare): a process start, not a round trip.
  console.log(`${pad('run, per-call')}${ms(figures.runMs, 3)}${ms(figures.runP90Ms, 3)}   ratio ${(figures.runMs / figures.rawMs).toFixed(2).padStart(5)}  (reference, no target)`);
  console.log('\n12. Python client: sequential `await ping(i)` calls/s through `ptc serve` vs the same raw ping-pong (median of 5)');
  const calls = figures.ptcRate / figures.rawRate;
  console.log(`${pad('floor: raw ping-pong')}${rate(figures.rawRate)}  N=${figures.sizes.raw}`);
  console.log(`${pad('ptc serve binding calls')}${rate(figures.ptcRate)}  N=${String(figures.sizes.ptc).padEnd(6)}   ${verdict(calls, calls >= 1 / 3, '≥ 0.33')}`);
}
