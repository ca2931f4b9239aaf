// 19. Per-call throughput and marginal memory (issue 36), each a ratio against a floor measured in
// the same run: sequential per-call runs against bare `node -e 0` spawned back to back, 100 runs
// at once against the same spawn rate, a burst of 20 after an idle minute against a warm run, and
// the proportional set size (PSS) of 20 idle retained environments against 20 idle `node -i`.
// Every runtime has the default configuration (the default sandbox and pool) with the binary's
// carrier when it is built. `node test/bench/throughput.ts` prints these rows alone.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRuntime, type Runtime, type RuntimeConfig } from '../../host/index.ts';
import { bareNode } from './floors.ts';
import { median, p90, SETTLE_MS } from './stats.ts';
import { targetRow, type TargetRow } from './targets.ts';

const BIN = join(import.meta.dirname, '..', '..', 'dist', 'ptc');
const LAUNCH: RuntimeConfig = existsSync(BIN) ? { launch: { kind: 'embedded', executable: BIN } } : {};
const CARRIER = existsSync(BIN) ? 'embedded' : 'source';
const NODE = process.execPath;
/** Runs (and spawns) per rate sample, and samples of each, alternating ptc and the floor. */
const STREAM = 40;
const ROUNDS = 3;
const CONCURRENT = 100;
const BURST = 20;
const IDLE_MS = 60_000;
const SHORT_IDLE_MS = 3_000;
const RETAINED = 20;
/** USER_HZ: Linux reports /proc times in hundredths of a second on every architecture Node runs on. */
const CLOCK_TICKS = 100;

const msText = (value: number): string => `${value.toFixed(1)} ms`;
const rateText = (value: number): string => `${value.toFixed(1)}/s`;
const mbText = (kb: number): string => `${(kb / 1024).toFixed(1)} MB`;

async function ok(runtime: Runtime, request: Parameters<Runtime['resolve']>[0]): Promise<{ warm: boolean }> {
  const result = await runtime.run(runtime.resolve(request));
  if (result.status !== 'ok') throw new Error(`run() failed: ${result.failure.kind}: ${result.failure.message}`);
  return result;
}

/** Per second, of `count` calls of `step` one after another. */
async function sequentialRate(count: number, step: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) await step();
  return count / ((performance.now() - start) / 1000);
}

/** CPU time (ms) of this process and of its reaped descendants (the kernel adds a child's, and its own reaped children's, once it is waited for): /proc/self/stat fields 14 to 17, in clock ticks. */
function cpuWithChildren(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [14, 15, 16, 17].reduce((sum, field) => sum + Number(fields[field - 3]), 0) * (1000 / CLOCK_TICKS);
}

/** CPU (ms) spent while `work` runs, by this process and the children it reaped meanwhile. */
async function cpuOf<T>(work: () => Promise<T>): Promise<{ value: T; cpuMs: number }> {
  const before = cpuWithChildren();
  const value = await work();
  return { value, cpuMs: cpuWithChildren() - before };
}

/** Sequential and concurrent runs/s, each against bare `node -e 0` spawned back to back. */
async function rates(notes: string[]): Promise<TargetRow[]> {
  const runtime = createRuntime(LAUNCH);
  try {
    await runtime.warmUp();
    const run = () => ok(runtime, { program: 'return 1 + 1' });
    // A warm-up stream shows the pool the demand, as a host's first minute of runs would.
    await sequentialRate(STREAM, run);
    const floor: number[] = [];
    const own: number[] = [];
    const concurrent: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(SETTLE_MS);
      floor.push(await sequentialRate(STREAM, bareNode));
      await sleep(SETTLE_MS);
      own.push(await sequentialRate(STREAM, run));
      await sleep(SETTLE_MS);
      const start = performance.now();
      await Promise.all(Array.from({ length: CONCURRENT }, run));
      concurrent.push(CONCURRENT / ((performance.now() - start) / 1000));
    }
    const floorRate = median(floor);
    const sequentialRow = targetRow(`sequential per-call runs/s, default config, ${CARRIER} ÷ node -e 0 back to back`, rateText(median(own)), `${rateText(floorRate)} node`, median(own) / floorRate, { min: 0.9 });
    const concurrentRow = targetRow(`${CONCURRENT} concurrent per-call runs, runs/s, ${CARRIER} ÷ node -e 0 back to back`, rateText(median(concurrent)), `${rateText(floorRate)} node`, median(concurrent) / floorRate, { min: 1 });
    console.log(`  sequential: ptc ${own.map(rateText).join(', ')}; node -e 0 ${floor.map(rateText).join(', ')}; ${CONCURRENT} at once: ${concurrent.map(rateText).join(', ')}`);
    if (!sequentialRow.pass || !concurrentRow.pass) {
      // Where the time goes: CPU (host and every child reaped) per run against per bare spawn.
      const spawnCpu = (await cpuOf(() => sequentialRate(STREAM, bareNode))).cpuMs / STREAM;
      const hostBefore = process.cpuUsage();
      const runCpu = (await cpuOf(() => sequentialRate(STREAM, run))).cpuMs / STREAM;
      const hostCpu = process.cpuUsage(hostBefore);
      notes.push(
        `per-call throughput: a run costs ${runCpu.toFixed(1)} ms of CPU, the host's ${((hostCpu.user + hostCpu.system) / 1000 / STREAM).toFixed(1)} ms and the rest its carrier's boot, run and end under the sandbox; ` +
          `a bare node -e 0 costs ${spawnCpu.toFixed(1)} ms. The pool keeps ${availableParallelism()} boots under way (one per core), so a stream's rate is the machine's CPU over a run's; ` +
          'it would take a run whose whole cost (boot, sandbox set-up, kill) is no more CPU than a bare Node start.',
      );
    }
    return [sequentialRow, concurrentRow];
  } finally {
    await runtime.dispose();
  }
}

/** Warm runs of `run`, each after a pause in which the pool refills: their durations (ms). */
async function warmRuns(runtime: Runtime, run: () => Promise<unknown>, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    await sleep(SETTLE_MS);
    await runtime.warmUp();
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  return samples;
}

/** A burst of 20 back-to-back runs after the runtime idled a minute, p90 against a warm run's median. */
async function burstAfterIdle(notes: string[]): Promise<TargetRow> {
  const runtime = createRuntime(LAUNCH);
  try {
    await runtime.warmUp();
    const run = () => ok(runtime, { program: 'return 1 + 1' });
    const warm = await warmRuns(runtime, run, BURST / 2);
    // The host's previous burst: the demand the pool remembers.
    for (let i = 0; i < BURST; i++) await run();
    await sleep(IDLE_MS);
    const burst: number[] = [];
    let booted = 0;
    for (let i = 0; i < BURST; i++) {
      const start = performance.now();
      if (!(await run()).warm) booted++;
      burst.push(performance.now() - start);
    }
    // Half the warm runs before the idle minute, half after the burst: the machine's load then and now.
    warm.push(...(await warmRuns(runtime, run, BURST / 2)));
    // The same burst after a short idle: what the minute itself adds.
    await sleep(SHORT_IDLE_MS);
    await runtime.warmUp();
    const short: number[] = [];
    for (let i = 0; i < BURST; i++) {
      const start = performance.now();
      await run();
      short.push(performance.now() - start);
    }
    const row = targetRow(`burst of ${BURST} back-to-back runs after an idle minute, p90 ÷ warm median, ${CARRIER}`, msText(p90(burst)), `${msText(median(warm))} warm`, p90(burst) / median(warm), { max: 2 });
    console.log(`  burst after idle: ${burst.map((value) => value.toFixed(0)).join(' ')} ms (${booted} of ${BURST} took no booted carrier); after ${SHORT_IDLE_MS / 1000} s idle: ${short.map((value) => value.toFixed(0)).join(' ')} ms; warm runs ${warm.map((value) => value.toFixed(0)).join(' ')} ms`);
    if (!row.pass) {
      const cold = median(burst) > 1.5 * median(short);
      notes.push(
        `burst after idle: ${booted} of ${BURST} runs found no booted carrier; the burst's p90 is ${msText(p90(burst))} and its median ${msText(median(burst))} against a warm median of ${msText(median(warm))} ` +
          `(the warm runs' own p90 is ${(p90(warm) / median(warm)).toFixed(2)}× their median: load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores). ` +
          `The same burst after ${SHORT_IDLE_MS / 1000} s idle: p90 ${msText(p90(short))}, median ${msText(median(short))} (p90 ${(p90(short) / median(warm)).toFixed(2)}× the warm median). ` +
          (cold
            ? 'After the minute every run is slower, not only the tail: code gone cold, not boots. V8 flushes the bytecode of functions unused for a while (a host under --no-flush-bytecode measured a burst median 1.9× its warm median after a minute against 3.5× without, one sample each). It would take keeping the run path\'s code compiled through an idle minute in the host and the pooled carriers.'
            : 'After the minute the runs are about as fast as after a few seconds (median against median), and no run waited for a boot: the tail is the machine\'s load, which lifts the warm runs\' own p90 as much. It would take a machine without other work to show the row at its target.'),
      );
    }
    return row;
  } finally {
    await runtime.dispose();
  }
}

/** Every process below `root`. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited while listing
    }
  }
  const found: number[] = [];
  for (let queue = [root]; queue.length > 0; ) {
    const next = children.get(queue.shift()!) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

/** A process's proportional set size in kB (a page shared by n processes counts 1/n), whole and its anonymous and file-backed parts; zeros once it is gone. */
function pssKb(pid: number): { pss: number; anon: number; file: number } {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(rollup)?.[1] ?? 0);
    return { pss: field('Pss'), anon: field('Pss_Anon'), file: field('Pss_File') };
  } catch {
    return { pss: 0, anon: 0, file: 0 };
  }
}

/** The sum of each part over the processes, divided by `per`. */
function pssOf(pids: number[], per: number): { pss: number; anon: number; file: number } {
  const sum = { pss: 0, anon: 0, file: 0 };
  for (const pid of pids) {
    const one = pssKb(pid);
    sum.pss += one.pss / per;
    sum.anon += one.anon / per;
    sum.file += one.file / per;
  }
  return sum;
}

const split = (memory: { anon: number; file: number }): string => `${mbText(memory.anon)} anonymous + ${mbText(memory.file)} file-backed`;

/** PSS of 20 idle retained environments (every process of each one's tree) against 20 idle `node -i`, per environment. */
async function retainedMemory(notes: string[]): Promise<TargetRow> {
  const nodes: ChildProcess[] = [];
  let floor: { pss: number; anon: number; file: number };
  try {
    for (let i = 0; i < RETAINED; i++) {
      const child = spawn(NODE, ['-i'], { stdio: ['pipe', 'ignore', 'ignore'] });
      nodes.push(child);
      await once(child, 'spawn');
    }
    await sleep(1000);
    floor = pssOf(nodes.map((child) => child.pid!), RETAINED);
  } finally {
    for (const child of nodes) {
      child.stdin!.end();
      child.kill();
    }
    await Promise.all(nodes.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined)));
  }
  const own = await environmentsPss({});
  // The same environments under node-permission, whose carriers start no interrupt watch (the
  // permission model refuses the worker it needs, carrier/run/interrupt.ts): what that worker costs.
  const unwatched = await environmentsPss({ sandbox: { backend: 'node-permission' } });
  const row = targetRow(`${RETAINED} idle retained environments, PSS of each whole tree, ${CARRIER} ÷ ${RETAINED} idle node -i`, mbText(own.pss), `${mbText(floor.pss)} node -i`, own.pss / floor.pss, { max: 1.1 });
  console.log(`  ${RETAINED} retained environments: ${own.processes} processes, ${mbText(own.pss * RETAINED)} PSS in all; ${RETAINED} node -i ${mbText(floor.pss * RETAINED)}; under node-permission (no interrupt watch) ${mbText(unwatched.carriers.pss)} a carrier`);
  if (!row.pass) {
    notes.push(
      `idle retained environments: ${mbText(own.pss)} PSS each, its carrier ${mbText(own.carriers.pss)} (${split(own.carriers)}) and its sandbox helpers ${mbText(own.helpers.pss)}; ` +
        `an idle node -i is ${mbText(floor.pss)} (${split(floor)}). Of what the carrier adds, its interrupt watch's worker thread (a second Node environment, which a stuck run's interrupt needs) is about ${mbText(own.carriers.pss - unwatched.carriers.pss)}: ` +
        `a carrier under node-permission, which starts none, is ${mbText(unwatched.carriers.pss)} (${split(unwatched.carriers)}). Ending that worker while the carrier idles would not give it back: a carrier whose worker had started and ended still held all but 1.3 MB of the 6.7 MB of anonymous memory the worker added (measured, one carrier each way), so it would take an interrupt that needs no worker; ` +
        `the rest is ptc's code and heap and the environment's own context. Fewer V8 threads (--v8-pool-size=1) and a 1 MB young generation measured under 0.5 MB less. It would take ${mbText(own.pss - 1.1 * floor.pss)} less per environment.`,
    );
  }
  return row;
}

/** PSS of 20 idle retained environments of `config` (every process of each one's tree), per environment: carriers, sandbox helpers and all. */
async function environmentsPss(config: RuntimeConfig): Promise<{ pss: number; carriers: { pss: number; anon: number; file: number }; helpers: { pss: number; anon: number; file: number }; processes: number }> {
  // No pool: only the environments' processes are below this one.
  const runtime = createRuntime({ ...LAUNCH, ...config, executionMode: 'persistent-in-memory', prestartCarrier: false, maxRetainedEnvironments: RETAINED });
  try {
    const owners = Array.from({ length: RETAINED }, () => ({}));
    for (const owner of owners) await ok(runtime, { program: '1', stateOwner: owner });
    await sleep(1000);
    const processes = descendants(process.pid);
    // The carriers are Node processes; the rest are the sandbox's helpers (bwrap's).
    const isCarrier = (pid: number): boolean => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'bwrap';
      } catch {
        return false;
      }
    };
    const carriers = pssOf(processes.filter(isCarrier), RETAINED);
    const helpers = pssOf(processes.filter((pid) => !isCarrier(pid)), RETAINED);
    return { pss: carriers.pss + helpers.pss, carriers, helpers, processes: processes.length };
  } finally {
    await runtime.dispose();
  }
}

/** Section 19's rows and, for each MISS, its measured reason. */
export async function throughput(notes: string[]): Promise<TargetRow[]> {
  console.log(`\n19. per-call throughput (median of ${ROUNDS} streams of ${STREAM}, ${CONCURRENT} at once), a burst of ${BURST} after an idle minute, PSS of ${RETAINED} idle retained environments`);
  const rows = await rates(notes);
  rows.push(await burstAfterIdle(notes));
  rows.push(await retainedMemory(notes));
  return rows;
}

if (import.meta.main) {
  const { printTargets } = await import('./targets.ts');
  const notes: string[] = [];
  const rows = await throughput(notes);
  printTargets(rows, notes);
}
