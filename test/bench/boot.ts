// 16. Where a start goes: `dist/ptc run return1.ts --json` (with a resident pool serving it, and
// with none running), `dist/ptc --version` and a carrier's
// boot, each against `node -e 0` (interleaved, median), and each split into phases. The phases
// come from a second set of starts with test/bench/boot-probe.cjs loaded (through NODE_OPTIONS,
// which the binary honours): the process's clock origin, Node's bootstrapComplete, ptc's boot
// marks (ptc:*, made once per process) and the child processes it started. The probe costs a few
// ms of its own, so the phases add up to a little more than the unprobed figure.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, type Runtime } from '../../host/index.ts';
import { planSandbox, resolvePolicy, wrapLaunch, type LaunchCommand } from '../../host/sandbox/index.ts';
import { launchCommand } from '../../host/worker/launch.ts';
import { openLocalConnection } from '../../host/worker/transports/local.ts';
import { exec, interleave, median, ms, pad, ratio } from './stats.ts';
import { skippedRow, targetRow, type TargetRow } from './targets.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'ptc');
const NODE = process.execPath;
const PROBE = join(import.meta.dirname, 'boot-probe.cjs');
const PROBED_STARTS = 10;

interface ProbeReport {
  /** performance.timeOrigin of the probed process: epoch ms, the clock the bench reads too. */
  origin: number;
  bootstrap: number;
  marks: Record<string, number>;
  children: Array<{ file: string; start: number; end?: number }>;
  exit: number;
}

const now = (): number => performance.timeOrigin + performance.now();

function probeReport(stderr: string): ProbeReport {
  const line = stderr.split('\n').find((text) => text.startsWith('@ptc-boot '));
  if (line === undefined) throw new Error(`the boot probe printed nothing; stderr: ${stderr.slice(-500)}`);
  return JSON.parse(line.slice('@ptc-boot '.length)) as ProbeReport;
}

/** One probed start of `file args`: its report, and when the bench spawned it and saw it close. */
async function probedStart(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ report: ProbeReport; spawned: number; closed: number }> {
  const spawned = now();
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, NODE_OPTIONS: `--require ${PROBE}` } });
  let stderr = '';
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = await once(child, 'close');
  const closed = now();
  if (code !== 0) throw new Error(`${file} ${args.join(' ')} exited with ${code}: ${stderr.slice(-500)}`);
  return { report: probeReport(stderr), spawned, closed };
}

type Phases = Array<[string, number]>;

/** Median of each phase over the starts, in order, with the whole start's median last. */
function medianPhases(all: Phases[], total: number[]): Phases {
  return [...all[0]!.map(([name], index): [string, number] => [name, median(all.map((phases) => phases[index]![1]))]), ['whole start (probed)', median(total)]];
}

function printPhases(title: string, phases: Phases): void {
  console.log(`  ${title}`);
  for (const [name, value] of phases) console.log(`${pad(`  ${name}`)}${ms(value)}`);
}

/** The phases of one `ptc run` start, from the probe's marks (see the README of each mark in host/cli/cli.ts and host/prestart.ts). */
function runPhases({ report, spawned, closed }: Awaited<ReturnType<typeof probedStart>>): Phases {
  const m = report.marks;
  for (const name of ['entry', 'sandbox', 'spawned', 'cli', 'parsed', 'run', 'result', 'printed', 'disposed']) {
    if (m[name] === undefined) throw new Error(`ptc run made no ptc:${name} mark (marks: ${JSON.stringify(m)})`);
  }
  // Children started before the sandbox was planned are its probes (bwrap's, when not cached).
  const probes = report.children.filter((child) => child.start < m.sandbox!).reduce((sum, child) => sum + ((child.end ?? m.sandbox!) - child.start), 0);
  return [
    ['exec', report.origin - spawned],
    ['Node bootstrap', report.bootstrap],
    ['bundle load', m.entry! - report.bootstrap],
    ['sandbox set-up', m.sandbox! - m.entry! - probes],
    ['  of which bwrap probe', probes],
    ['carrier spawn (spare)', m.spawned! - m.sandbox!],
    ['CLI modules (yargs)', m.cli! - m.spawned!],
    ['argument parsing', m.parsed! - m.cli!],
    ['library, config, program', m.run! - m.parsed!],
    ['first run (waits connect)', m.result! - m.run!],
    ['print result', m.printed! - m.result!],
    ['cleanup (dispose)', m.disposed! - m.printed!],
    ['exit', report.exit - m.disposed!],
    ['teardown (until reaped)', closed - (report.origin + report.exit)],
  ];
}

/** The phases of a `ptc run` that a resident pool runs (host/cli/resident-client.ts's marks). */
function residentPhases({ report, spawned, closed }: Awaited<ReturnType<typeof probedStart>>): Phases {
  const m = report.marks;
  for (const name of ['entry', 'resident-parsed', 'resident-place', 'resident-open', 'resident-message']) {
    if (m[name] === undefined) throw new Error(`ptc run made no ptc:${name} mark: did the pool serve it? (marks: ${JSON.stringify(m)})`);
  }
  return [
    ['exec', report.origin - spawned],
    ['Node bootstrap', report.bootstrap],
    ['bundle load', m.entry! - report.bootstrap],
    ['fast path: modules, argv', m['resident-parsed']! - m.entry!],
    ['find the pool', m['resident-place']! - m['resident-parsed']!],
    ['connect, handshake', m['resident-open']! - m['resident-place']!],
    ['run in the pool', m['resident-message']! - m['resident-open']!],
    ['print, exit', report.exit - m['resident-message']!],
    ['teardown (until reaped)', closed - (report.origin + report.exit)],
  ];
}

/**
 * An environment of its own whose resident pool serves the bench's `ptc run`s (`ptc resident
 * start` with it): the pool serves only clients whose environment is the same, so the cold rows,
 * run with the bench's own environment, find none.
 */
export async function residentEnvironment(work: string, name: string, extra: NodeJS.ProcessEnv = {}): Promise<NodeJS.ProcessEnv> {
  const runtimeDir = join(work, name);
  mkdirSync(runtimeDir, { mode: 0o700 });
  const env = { ...process.env, XDG_RUNTIME_DIR: runtimeDir, PTC_RESIDENT_IDLE_MS: '600000', ...extra };
  const started = await exec(BIN, ['resident', 'start'], env);
  if (!/pool \d+/.test(started)) throw new Error(`ptc resident start printed ${JSON.stringify(started)}`);
  return env;
}

function versionPhases({ report, spawned, closed }: Awaited<ReturnType<typeof probedStart>>): Phases {
  const m = report.marks;
  return [
    ['exec', report.origin - spawned],
    ['Node bootstrap', report.bootstrap],
    ['bundle load', m.entry! - report.bootstrap],
    ['print and exit', report.exit - m.entry!],
    ['teardown (until reaped)', closed - (report.origin + report.exit)],
  ];
}

/** The carrier the CLI's default run starts (embedded, default policy, the best backend here), with the probe in its NODE_OPTIONS. */
async function carrierLaunch(cwd: string): Promise<{ command: LaunchCommand; backend: string; cleanup: () => Promise<void> }> {
  const base = launchCommand({ kind: 'embedded', executable: BIN }, 256);
  base.env.NODE_OPTIONS = `${base.env.NODE_OPTIONS ?? ''} --require ${PROBE}`.trim();
  // The sandbox's fresh root binds only what the launch reads (docs/host-view.md): the probe too.
  base.readable = [...(base.readable ?? []), PROBE];
  const policy = await resolvePolicy({ mode: 'workspace-write' }, cwd);
  const plan = await planSandbox(policy, {});
  if ('unavailable' in plan) throw new Error(`no sandbox for the carrier's boot: ${plan.unavailable}`);
  const wrapped = wrapLaunch(base, plan, { cwd });
  return { command: wrapped.command, backend: plan.backend, cleanup: wrapped.cleanup };
}

/** One probed carrier boot: spawned as the host spawns it, until its hello reaches the bench, then closed. */
async function probedCarrier(cwd: string): Promise<Phases> {
  const launch = await carrierLaunch(cwd);
  const spawned = now();
  const connection = openLocalConnection(launch.command, cwd);
  let stderr = '';
  connection.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  connection.stdout.resume();
  const control = connection.control as Socket;
  await once(control, 'data');
  const hello = now();
  control.end();
  await connection.settled;
  await launch.cleanup();
  const report = probeReport(stderr);
  const m = report.marks;
  return [
    [`exec (${launch.backend} set-up)`, report.origin - spawned],
    ['Node bootstrap', report.bootstrap],
    ['bundle load', m.entry! - report.bootstrap],
    ['carrier modules', m.carrier! - m.entry!],
    ['carrier set-up, hello', m.hello! - m.carrier!],
    ['connect (hello read)', hello - (report.origin + m.hello!)],
  ];
}

const phase = (phases: Phases, name: string): number => phases.find(([label]) => label === name)?.[1] ?? 0;
const times = (value: number, floor: number): string => `${value.toFixed(1)} ms = ${(value / floor).toFixed(2)}× node -e 0`;

/** The measured reason of each MISS among the rows, from the probed phases, and what it would take. */
function missNotes(rows: TargetRow[], floor: number, resident: Phases, run: Phases, version: Phases, carrier: Phases): string[] {
  const notes: string[] = [];
  const [residentRow, runRow, versionRow, coldRow] = rows;
  if (residentRow?.pass === false) {
    const parts = resident.slice(0, -1).map(([name, value]) => `${name.trim()} ${value.toFixed(1)}`).join(', ');
    notes.push(
      `ptc run with a resident pool: one Node start plus the pool's run (${parts} ms, probed); ` +
        `Node's own start and the bundle's load alone are ${times(phase(resident, 'exec') + phase(resident, 'Node bootstrap') + phase(resident, 'bundle load'), floor)}.`,
    );
  }
  const beforeSpawn = ['exec', 'Node bootstrap', 'bundle load', 'sandbox set-up', '  of which bwrap probe', 'carrier spawn (spare)'].reduce((sum, name) => sum + phase(run, name), 0);
  const carrierBoot = carrier.at(-1)![1];
  if (runRow?.pass === false) {
    notes.push(
      `ptc run: two Node starts, one after the other: the host reaches the carrier's spawn after ${times(beforeSpawn, floor)} ` +
        `(exec, bootstrap, bundle, sandbox set-up), and a carrier takes ${times(carrierBoot, floor)} from spawn to hello under its sandbox; ` +
        `the CLI's own parsing and library load overlap that boot. With no pool running that is the path; a resident pool (the row above) takes both starts off it.`,
    );
  }
  if (versionRow?.pass === false) {
    notes.push(
      `ptc --version loads no part and no parser (build/sea-entry.ts prints it): the main script's load ${times(phase(version, 'bundle load'), floor)}, ` +
        `printing and exit ${times(phase(version, 'print and exit'), floor)}; the rest is Node's own start, which the floor pays too.`,
    );
  }
  if (coldRow?.pass === false) {
    const parts = carrier.slice(0, -1).map(([name, value]) => `${name.trim()} ${value.toFixed(1)}`).join(', ');
    notes.push(
      `carrier cold boot: spawn to hello ${times(carrierBoot, floor)} (${parts} ms), then the run and the carrier's end. A V8 startup snapshot of the ` +
        `carrier measured 10 ms less CPU a boot here but 5 MiB more RSS per idle carrier, with node:vm, node:child_process and node:async_hooks ` +
        `not verified by Node in a user snapshot, so it is not used; at the target a cold boot is not what a run should wait for (the warm pool).`,
    );
  }
  return notes;
}

async function firstRunOk(runtime: Runtime): Promise<void> {
  const result = await runtime.run(runtime.resolve({ program: 'return 1' }));
  if (result.status !== 'ok') throw new Error(`run() failed: ${result.failure.kind}: ${result.failure.message}`);
}

/** Section 16; returns the issue's rows it measures (ptc run and ptc --version whole, the carrier's cold boot) and, for each MISS, its measured reason. */
export async function boot(): Promise<{ rows: TargetRow[]; notes: string[] }> {
  console.log('\n16. boot: `dist/ptc run return1.ts --json` (a resident pool serving, and none running), `dist/ptc --version`, a cold carrier run, vs `node -e 0` (median of 20 after 3 warm-ups, interleaved), then each start in phases (median of 10 probed starts)');
  const names = {
    resident: 'whole process, trivial program: ptc run, a resident pool serving',
    run: 'whole process, trivial program: ptc run, no pool running (cold path)',
    version: 'whole process: ptc --version',
    cold: 'carrier cold boot (no spare): run()',
  };
  if (!existsSync(BIN)) {
    console.log('  skipped: dist/ptc is missing (npm run build)');
    return { rows: Object.values(names).map((name) => skippedRow(name, 'dist/ptc is missing (npm run build)')), notes: [] };
  }
  const work = mkdtempSync(join(tmpdir(), 'ptc-bench-boot-'));
  const program = join(work, 'return1.ts');
  writeFileSync(program, 'return 1\n');
  // A runtime with no spare: every run boots its carrier, as a run that finds no warm one does.
  const cold = createRuntime({ launch: { kind: 'embedded', executable: BIN }, prestartCarrier: false });
  const pooled = await residentEnvironment(work, 'pool');
  const probedPool = await residentEnvironment(work, 'probed-pool', { NODE_OPTIONS: `--require ${PROBE}` });
  const returnsOne = async (env?: NodeJS.ProcessEnv): Promise<void> => {
    const printed = JSON.parse(await exec(BIN, ['run', program, '--json'], env)) as { status: string; value?: unknown };
    if (printed.status !== 'ok' || printed.value !== 1) throw new Error(`ptc run printed ${JSON.stringify(printed)}`);
  };
  try {
    const samples = await interleave(
      {
        floor: () => exec(NODE, ['-e', '0']),
        resident: () => returnsOne(pooled),
        run: () => returnsOne(),
        version: () => exec(BIN, ['--version']),
        cold: () => firstRunOk(cold),
      },
      { warmups: 3, iterations: 20 },
    );
    const floor = median(samples.floor!);
    const floorText = `${ms(floor).trim()} node -e 0`;
    console.log(`${pad('floor: node -e 0')}${ms(floor)}`);
    const rows: TargetRow[] = [];
    for (const [key, label, target] of [['resident', 'ptc run --json, pool', 1.5], ['run', 'ptc run --json, no pool', 3], ['version', 'dist/ptc --version', 1.5], ['cold', 'run() cold, embedded', 1.3]] as const) {
      const own = median(samples[key]!);
      const row = targetRow(names[key], ms(own).trim(), floorText, ratio(own, floor), { max: target });
      rows.push(row);
      console.log(`${pad(label)}${ms(own)}   ratio ${row.ratio!.toFixed(2).padStart(5)}  target ≤ ${target}  ${row.pass ? 'PASS' : 'MISS'}`);
    }

    const runs: Phases[] = [];
    const runTotals: number[] = [];
    const residents: Phases[] = [];
    const residentTotals: number[] = [];
    const versions: Phases[] = [];
    const versionTotals: number[] = [];
    const carriers: Phases[] = [];
    for (let i = 0; i < PROBED_STARTS; i++) {
      const run = await probedStart(BIN, ['run', program, '--json']);
      runs.push(runPhases(run));
      runTotals.push(run.closed - run.spawned);
      const resident = await probedStart(BIN, ['run', program, '--json'], probedPool);
      residents.push(residentPhases(resident));
      residentTotals.push(resident.closed - resident.spawned);
      const version = await probedStart(BIN, ['--version']);
      versions.push(versionPhases(version));
      versionTotals.push(version.closed - version.spawned);
      carriers.push(await probedCarrier(work));
    }
    const runMedians = medianPhases(runs, runTotals);
    const residentMedians = medianPhases(residents, residentTotals);
    const versionMedians = medianPhases(versions, versionTotals);
    const carrierMedians = medianPhases(carriers, carriers.map((phases) => phases.reduce((sum, [, value]) => sum + value, 0)));
    carrierMedians[carrierMedians.length - 1]![0] = 'spawn to hello (probed)';
    printPhases('dist/ptc run return1.ts --json, a resident pool serving:', residentMedians);
    printPhases('dist/ptc run return1.ts --json, no pool running (the spare carrier boots beside the CLI from "carrier spawn" on):', runMedians);
    printPhases('dist/ptc --version:', versionMedians);
    printPhases('a carrier, spawned as the host spawns it, until its hello is read:', carrierMedians);
    return { rows, notes: missNotes(rows, floor, residentMedians, runMedians, versionMedians, carrierMedians) };
  } finally {
    for (const env of [pooled, probedPool]) await exec(BIN, ['resident', 'stop'], env).catch(() => undefined);
    await cold.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { printTargets } = await import('./targets.ts');
  const { rows, notes } = await boot();
  printTargets(rows, notes);
}
