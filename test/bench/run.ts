// `npm run bench`: ptc's speed as ratios against floors measured in the same run, a bare `node`
// start (process floor) and a raw fd-3 pipe ping-pong (transport floor), each with its target.
// The bench reports and does not gate: a MISS still exits 0; only a broken bench exits 1.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { createRuntime, type RunResult, type Runtime, type RuntimeConfig } from '../../host/index.ts';
import { retained } from './retained.ts';
import { sandboxed } from './sandbox.ts';
import { mcp } from './mcp.ts';
import { remote } from './ssh.ts';
import { served } from './serve.ts';
import { releaseStartup } from './release.ts';
import { hostMemory } from './host-memory.ts';
import { bareNode, rawPingRate } from './floors.ts';
import { boot, residentEnvironment } from './boot.ts';
import { peers } from './peers.ts';
import { poolRows } from './pool.ts';
import { tracesRows } from './traces.ts';
import { throughput } from './throughput.ts';
import { jsonRows } from './json.ts';
import { printTargets, type TargetRow } from './targets.ts';
import { exec, interleave, judge, measuredRows, median, ms, p90, pad, printTable, ratio } from './stats.ts';

const { values: flags } = parseArgs({ options: { long: { type: 'boolean', default: false }, only: { type: 'string' } } });
/** `--only 2,5`: just those sections (by number; 13 is the --long one), for measuring one lever. */
const only = flags.only === undefined ? undefined : new Set(flags.only.split(',').map((n) => Number(n.trim())));
const SECTIONS = 21;
if (only !== undefined && [...only].some((n) => !Number.isInteger(n) || n < 1 || n > SECTIONS)) {
  console.error(`bench: --only takes section numbers 1 to ${SECTIONS} separated by commas, got ${JSON.stringify(flags.only)}`);
  process.exit(2);
}
const wanted = (section: number): boolean => (only === undefined ? section !== 13 || flags.long : only.has(section));

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'ptc');
const NODE = process.execPath;
const HAVE_BIN = existsSync(BIN);
const WORK = mkdtempSync(join(tmpdir(), 'ptc-bench-'));

/** The library's carriers: from source always, the binary's own carrier when it is built. */
const EMBEDDED: RuntimeConfig = { launch: { kind: 'embedded', executable: BIN } };
const VARIANTS: Array<[string, RuntimeConfig]> = [['source', {}], ...(HAVE_BIN ? [['embedded', EMBEDDED] as [string, RuntimeConfig]] : [])];
/** The same without a spare carrier booted ahead of each run: what a run costs when it has to start one. */
const COLD: Array<[string, RuntimeConfig]> = VARIANTS.map(([name, config]) => [`${name}, cold`, { ...config, prestartCarrier: false }]);


// ---- shared helpers ----


async function runOk(runtime: Runtime, request: Parameters<Runtime['resolve']>[0]): Promise<RunResult & { status: 'ok' }> {
  const result = await runtime.run(runtime.resolve(request));
  if (result.status !== 'ok') throw new Error(`run() failed: ${result.failure.kind}: ${result.failure.message}`);
  return result;
}

// ---- measurements ----

function machine(): void {
  let commit = 'unknown commit';
  try {
    const git = (...args: string[]): string => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    commit = `commit ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') === '' ? '' : ' + uncommitted changes'}`;
  } catch {
    // not a git checkout
  }
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  console.log(`machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${process.platform}-${process.arch}`);
  console.log(`node:    ${NODE} ${process.version}; load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  console.log(`ptc:     ${commit}; ${HAVE_BIN ? BIN : 'dist/ptc missing (npm run build): embedded variants skipped'}\n`);
}

/**
 * 1. A trivial program through run() against spawning a bare `node -e 0`. The cold pass runs after
 * the default runtimes are disposed: spares are shared by launch, so it would otherwise take theirs.
 */
async function perCallStart(variants: Array<[string, RuntimeConfig]>, cold: boolean): Promise<void> {
  const runtimes = variants.map(([name, config]) => [name, createRuntime(config)] as const);
  const cases: Record<string, () => Promise<unknown>> = { floor: bareNode };
  for (const [name, runtime] of runtimes) cases[name] = () => runOk(runtime, { program: 'return 1' });
  const samples = await interleave(cases);
  const floor = samples.floor!;
  console.log(`${pad('floor: node -e 0')}${ms(median(floor))}${ms(p90(floor))}`);
  for (const [name, runtime] of runtimes) {
    const own = samples[name]!;
    const p90Ratio = `p90 ratio ${ratio(p90(own), p90(floor)).toFixed(2)}`;
    const row = { row: 'g', what: `per-call run() of return 1, spare, ${name}`, figure: ms(median(own)).trim(), floor: `${ms(median(floor)).trim()} node` };
    const judged = cold
      ? `ratio ${ratio(median(own), median(floor)).toFixed(2).padStart(5)}  (reference, no target; ${p90Ratio})`
      : `${judge(ratio(median(own), median(floor)), { max: 0.15 }, row)}  (${p90Ratio})`;
    console.log(`${pad(`run() ${name}`)}${ms(median(own))}${ms(p90(own))}   ${judged}`);
    await runtime.dispose();
  }
}

/** 2. `dist/ptc run FILE --json` as a whole process against a bare `node -e 0`: with a resident pool serving it (the row), and with none running. */
async function cliStart(): Promise<void> {
  console.log('\n2. `dist/ptc run return1.ts --json` vs `node -e 0` (median / p90 of 30 after 3 warm-ups, interleaved): row (a) with a resident pool serving it, then with none running');
  if (!HAVE_BIN) return console.log('  skipped: dist/ptc is missing (npm run build)');
  const program = join(WORK, 'return1.ts');
  writeFileSync(program, 'return 1\n');
  const pooled = await residentEnvironment(WORK, 'section-2-pool');
  const returnsOne = async (env?: NodeJS.ProcessEnv): Promise<void> => {
    const printed = JSON.parse(await exec(BIN, ['run', program, '--json'], env)) as { status: string; value?: unknown };
    if (printed.status !== 'ok' || printed.value !== 1) throw new Error(`ptc run printed ${JSON.stringify(printed)}`);
  };
  try {
    const samples = await interleave({ floor: bareNode, ptc: () => returnsOne(pooled), cold: () => returnsOne() });
    const { floor, ptc, cold } = samples as { floor: number[]; ptc: number[]; cold: number[] };
    console.log(`${pad('floor: node -e 0')}${ms(median(floor))}${ms(p90(floor))}`);
    console.log(`${pad('ptc run --json, pool')}${ms(median(ptc))}${ms(p90(ptc))}   ${judge(ratio(median(ptc), median(floor)), { max: 1.5 }, { row: 'a', what: 'dist/ptc run --json of return 1, whole process, a resident pool serving', figure: ms(median(ptc)).trim(), floor: `${ms(median(floor)).trim()} node` })}  (p90 ratio ${ratio(p90(ptc), p90(floor)).toFixed(2)})`);
    console.log(`${pad('ptc run --json, no pool')}${ms(median(cold))}${ms(p90(cold))}   ratio ${ratio(median(cold), median(floor)).toFixed(2)} (section 16 judges it against ≤ 3)`);
  } finally {
    await exec(BIN, ['resident', 'stop'], pooled).catch(() => undefined);
  }
}

/** Calls/s of `await ping(i)` in a loop; timed between the first and last call reaching the host. */
async function ptcPingRate(runtime: Runtime, n: number): Promise<number> {
  let calls = 0;
  let first = 0;
  let last = 0;
  const ping = async (x: unknown): Promise<unknown> => {
    last = performance.now();
    if (calls++ === 0) first = last;
    return x;
  };
  await runOk(runtime, { program: `for (let i = 0; i < ${n}; i++) await ping(i)`, bindings: { ping }, timeoutMs: null });
  if (calls !== n) throw new Error(`ping was called ${calls} times, expected ${n}`);
  return (n - 1) / ((last - first) / 1000);
}

/** 3. Sequential awaited binding calls against a raw pipe ping-pong between the same two processes. */
async function bindingCalls(): Promise<void> {
  const rounds = 5;
  console.log(`\n3. sequential \`await ping(i)\` calls/s vs raw fd-3 JSON-line ping-pong (median of ${rounds} interleaved, ~1.5 s each)`);
  const FLOOR = 'floor: raw pipe';
  const measures: Record<string, (n: number) => Promise<number>> = { [FLOOR]: rawPingRate };
  const runtimes = VARIANTS.map(([name, config]) => [`run() ${name}`, createRuntime(config)] as const);
  for (const [name, runtime] of runtimes) measures[name] = (n) => ptcPingRate(runtime, n);
  const cases: Record<string, () => Promise<unknown>> = {};
  const rates: Record<string, number[]> = {};
  const sizes: Record<string, number> = {};
  for (const [name, measure] of Object.entries(measures)) {
    // Two short runs warm up and size N for about 1.5 s (from the faster one: noise only slows).
    sizes[name] = Math.max(1000, Math.round(Math.max(await measure(2000), await measure(2000)) * 1.5));
    rates[name] = [];
    cases[name] = async () => rates[name]!.push(await measure(sizes[name]!));
  }
  await interleave(cases, { warmups: 0, iterations: rounds });
  const floor = median(rates[FLOOR]!);
  for (const name of Object.keys(measures)) {
    const own = median(rates[name]!);
    const rate = `${Math.round(own).toLocaleString('en-US')} /s`.padStart(10);
    const row = { row: 'd', what: `sequential binding calls/s, ${name.replace('run() ', '')}`, figure: `${Math.round(own)}/s`, floor: `${Math.round(floor)}/s pipe` };
    const judged = name === FLOOR ? '' : `   ${judge(ratio(own, floor), { min: 0.5 }, row)}`;
    console.log(`${pad(name)}${rate}  N=${String(sizes[name]).padEnd(6)}${judged}`);
  }
  for (const [, runtime] of runtimes) await runtime.dispose();
}

/** 4. inspect() of a 50 MB string end to end through run(), against building it without output. */
async function inspectThroughput(): Promise<void> {
  const size = 50 * 1024 * 1024;
  // One carrier is enough: the output path is the same code whichever way the carrier started.
  const [name, config] = VARIANTS.at(-1)!;
  console.log(`\n4. inspect() of a 50 MB string through run() with the ${name} carrier (median of 3, interleaved; no target)`);
  const runtime = createRuntime({ ...config, maxOutputBytes: 128 * 1024 * 1024 });
  const samples = await interleave(
    {
      build: () => runOk(runtime, { program: `const s = 'x'.repeat(${size}); return s.length` }),
      inspect: async () => {
        const result = await runOk(runtime, { program: `inspect('x'.repeat(${size}))` });
        const bytes = result.output.reduce((sum, entry) => sum + (entry.type === 'text' ? entry.text.length : 0), 0);
        if (bytes !== size + 1) throw new Error(`inspect printed ${bytes} bytes, expected ${size + 1}`);
      },
    },
    { warmups: 0, iterations: 3 },
  );
  await runtime.dispose();
  const build = median(samples.build!);
  const total = median(samples.inspect!);
  const mbps = (milliseconds: number): string => `${(50 / (milliseconds / 1000)).toFixed(0)} MB/s`;
  console.log(`${pad('build only')}${ms(build)}`);
  console.log(`${pad('build + inspect')}${ms(total)}   ${mbps(total)} end to end; output path ${ms(total - build).trim()} = ${mbps(total - build)}`);
}

const started = performance.now();
try {
  machine();
  if (wanted(1)) {
    console.log('1. run() of `return 1` vs spawn `node -e 0` (median / p90 of 30 after 3 warm-ups, interleaved)');
    await perCallStart(VARIANTS, false);
    console.log('   the same with prestartCarrier: false, so every run starts its carrier:');
    await perCallStart(COLD, true);
  }
  if (wanted(2)) await cliStart();
  if (wanted(3)) await bindingCalls();
  if (wanted(4)) await inspectThroughput();
  await retained(wanted);
  if (wanted(8)) await sandboxed();
  if (wanted(9)) await mcp();
  if (wanted(10)) await remote();
  if (wanted(11) || wanted(12)) await served();
  if (wanted(13)) await hostMemory();
  if (wanted(14)) await (await import('./network.ts')).network();
  if (wanted(15)) await releaseStartup();
  // Issue 19's rows, for the table the bench ends with.
  const targets: TargetRow[] = [];
  const notes: string[] = [];
  if (wanted(16)) {
    const measured = await boot();
    targets.push(...measured.rows);
    notes.push(...measured.notes);
  }
  if (wanted(17)) targets.push(...(await peers()));
  if (wanted(18)) targets.push(...(await poolRows(notes)));
  if (wanted(19)) targets.push(...(await throughput(notes)));
  if (wanted(20)) targets.push(...(await tracesRows()));
  if (wanted(21)) targets.push(...jsonRows(notes));
  const skipped: Array<[string, string]> = [];
  const rows = measuredRows();
  for (const [row, section] of [['a', 2], ['b', 6], ['c', 5], ['d', 3], ['e', 13], ['f', 7], ['g', 1]] as const) {
    if (rows.has(row)) continue;
    skipped.push([row, section === 13 ? 'not measured: it takes minutes, run `npm run bench -- --long` (or `-- --only 13`)' : `not measured in this run (section ${section}${section === 2 && !HAVE_BIN ? ': dist/ptc is missing' : ''})`]);
  }
  printTable(skipped);
  if (targets.length > 0) printTargets(targets, notes);
  console.log(`\nbench took ${((performance.now() - started) / 1000).toFixed(1)} s`);
} catch (error) {
  console.error('\nbench broke:', error);
  process.exitCode = 1;
} finally {
  rmSync(WORK, { recursive: true, force: true });
}
