// The warm pool's and the wire's rows of issue 19's table, each a ratio against a floor measured in
// the same run (floors.ts): a burst of 20 runs against a warm pool, a run right after another one
// and a run of 1+1 against a Node spawn, sequential binding calls and a retained round trip
// against the raw fd-3 pipe, and the idle retained environment's whole process tree against an
// idle `node -i`. `node test/bench/pool.ts` prints them alone; poolRows() gives them to the table.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRuntime, type Runtime, type RuntimeConfig } from '../../host/index.ts';
import { DEFAULT_POOL } from '../../host/runtime/config.ts';
import { bareNode, rawPingRate, rawPipe } from './floors.ts';
import { interleave, median, SETTLE_MS } from './stats.ts';

export interface PoolRow {
  workload: string;
  figure: string;
  floor: string;
  ratio: number;
  target: string;
  pass: boolean;
}

const BIN = join(import.meta.dirname, '..', '..', 'dist', 'ptc');
/** The binary's own carrier when it is built (what a user runs), else the source carrier. */
const LAUNCH: RuntimeConfig = existsSync(BIN) ? { launch: { kind: 'embedded', executable: BIN } } : {};
const CARRIER = existsSync(BIN) ? 'embedded' : 'source';
const NODE = process.execPath;
const IDLE_MS = 500;

const msText = (value: number, digits = 1): string => `${value.toFixed(digits)} ms`;
const mbText = (kb: number): string => `${(kb / 1024).toFixed(1)} MB`;
const row = (workload: string, figure: string, floor: string, ratio: number, target: { max: number } | { min: number }): PoolRow => ({
  workload,
  figure,
  floor,
  ratio,
  target: 'max' in target ? `≤ ${target.max}` : `≥ ${target.min}`,
  pass: 'max' in target ? ratio <= target.max : ratio >= target.min,
});

async function ok(runtime: Runtime, request: Parameters<Runtime['resolve']>[0]) {
  const result = await runtime.run(runtime.resolve(request));
  if (result.status !== 'ok') throw new Error(`run() failed: ${result.failure.kind}: ${result.failure.message}`);
  return result;
}

/** 20 back-to-back per-call runs once the pool is warm: how many paid a boot (warm: false). */
async function burst(pool: { min: number; max: number } | undefined): Promise<number> {
  const runtime = createRuntime({ ...LAUNCH, policy: { mode: 'full-access' }, ...(pool ? { pool } : {}) });
  try {
    // A first burst shows the pool the demand; the second is the one counted.
    for (let i = 0; i < 20; i++) await ok(runtime, { program: 'return 1 + 1' });
    await runtime.warmUp();
    let cold = 0;
    for (let i = 0; i < 20; i++) if (!(await ok(runtime, { program: 'return 1 + 1' })).warm) cold++;
    return cold;
  } finally {
    await runtime.dispose();
  }
}

/** run() of 1+1 with the pool warm, against `node -e 0`; and a run right after another against one after a pause. */
async function perCall(): Promise<PoolRow[]> {
  const runtime = createRuntime({ ...LAUNCH, policy: { mode: 'full-access' } });
  try {
    await runtime.warmUp();
    const samples = await interleave({
      floor: bareNode,
      warm: () => ok(runtime, { program: 'return 1 + 1' }),
    });
    // Back to back: a run whose start the clock sees begins the moment the previous one resolved.
    const after: number[] = [];
    const settled: number[] = [];
    for (let i = 0; i < 30; i++) {
      await sleep(SETTLE_MS);
      await runtime.warmUp();
      let start = performance.now();
      await ok(runtime, { program: 'return 1 + 1' });
      settled.push(performance.now() - start);
      start = performance.now();
      await ok(runtime, { program: 'return 1 + 1' });
      after.push(performance.now() - start);
    }
    const floor = median(samples.floor!);
    const warm = median(samples.warm!);
    return [
      row(`library run() of 1+1, warm pool, ${CARRIER} ÷ node -e 0`, msText(warm), `${msText(floor)} node`, warm / floor, { max: 0.1 }),
      row(`library run() right after another run ÷ after a pause, ${CARRIER}`, msText(median(after)), `${msText(median(settled))} paused`, median(after) / median(settled), { max: 1.2 }),
    ];
  } finally {
    await runtime.dispose();
  }
}

/** 2,000 sequential awaited binding calls per second, against the raw pipe's round trips per second. */
async function bindingCalls(): Promise<PoolRow> {
  const runtime = createRuntime({ ...LAUNCH, policy: { mode: 'full-access' } });
  const n = 2_000;
  const ptcRate = async (): Promise<number> => {
    let first = 0;
    let last = 0;
    let calls = 0;
    const ping = async (x: unknown) => {
      last = performance.now();
      if (calls++ === 0) first = last;
      return x;
    };
    await ok(runtime, { program: `for (let i = 0; i < ${n}; i++) await ping(i)`, bindings: { ping }, timeoutMs: null });
    return (n - 1) / ((last - first) / 1000);
  };
  try {
    const ptc: number[] = [];
    const pipe: number[] = [];
    await ptcRate();
    await rawPingRate(n);
    for (let round = 0; round < 5; round++) {
      ptc.push(await ptcRate());
      pipe.push(await rawPingRate(n));
    }
    const own = median(ptc);
    const floor = median(pipe);
    return row(`2,000 sequential awaited binding calls, calls/s, ${CARRIER} ÷ raw pipe`, `${Math.round(own)}/s`, `${Math.round(floor)}/s pipe`, own / floor, { min: 0.7 });
  } finally {
    await runtime.dispose();
  }
}

/** A retained run of `1` on a live environment, p50, against one raw fd-3 round trip. */
async function roundTrip(): Promise<PoolRow> {
  const runtime = createRuntime({ ...LAUNCH, executionMode: 'persistent-in-memory', policy: { mode: 'full-access' } });
  const pipe = await rawPipe();
  const owner = {};
  try {
    const own: number[] = [];
    const floor: number[] = [];
    for (let round = 0; round < 320; round++) {
      let start = performance.now();
      await ok(runtime, { program: '1', stateOwner: owner });
      if (round >= 20) own.push(performance.now() - start);
      start = performance.now();
      await pipe.roundTrip();
      if (round >= 20) floor.push(performance.now() - start);
    }
    return row(`retained round trip of 1, p50, ${CARRIER} ÷ raw fd-3 round trip`, msText(median(own), 3), `${msText(median(floor), 3)} pipe`, median(own) / median(floor), { max: 3 });
  } finally {
    await pipe.close();
    await runtime.dispose();
  }
}

function vmRssKb(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Every process below `root`. */
function tree(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited while listing
    }
  }
  const found: number[] = [];
  for (let queue = [root]; queue.length > 0; ) {
    const children = parents.get(queue.shift()!) ?? [];
    found.push(...children);
    queue.push(...children);
  }
  return found;
}

/** The median of 3: an idle `node -i`, and one retained environment (its whole tree) idle after a run, per backend. */
async function idleMemory(): Promise<PoolRow[]> {
  const floors: number[] = [];
  for (let i = 0; i < 3; i++) {
    const child = spawn(NODE, ['-i'], { stdio: ['pipe', 'ignore', 'ignore'] });
    await once(child, 'spawn');
    await sleep(IDLE_MS);
    floors.push(vmRssKb(child.pid!));
    child.stdin.end();
    child.kill();
    await once(child, 'exit');
  }
  const floor = median(floors);
  const rows: PoolRow[] = [];
  for (const backend of ['bwrap', 'node-permission'] as const) {
    const samples: number[] = [];
    for (let i = 0; i < 3; i++) {
      const runtime = createRuntime({ ...LAUNCH, executionMode: 'persistent-in-memory', prestartCarrier: false, sandbox: { backend, require: 'partial' } });
      try {
        await ok(runtime, { program: '1', stateOwner: {} });
        await sleep(IDLE_MS);
        samples.push(tree(process.pid).reduce((sum, pid) => sum + vmRssKb(pid), 0));
      } finally {
        await runtime.dispose();
      }
    }
    const own = median(samples);
    rows.push(row(`idle retained environment, whole tree RSS, ${backend}, ${CARRIER} ÷ idle node -i`, mbText(own), `${mbText(floor)} node -i`, own / floor, { max: 1.1 }));
  }
  return rows;
}

/** The pool's rows of the bench table. */
export async function poolRows(): Promise<PoolRow[]> {
  const rows: PoolRow[] = [];
  const sized = await burst({ min: 1, max: 20 });
  rows.push(row(`burst of 20 back-to-back run(), warm pool (pool.max 20), ${CARRIER}: runs that booted`, `${sized} of 20`, '20 runs', sized / 20, { max: 0 }));
  const defaults = await burst(undefined);
  rows.push(row(`the same with the default pool (max ${DEFAULT_POOL.max}): runs that booted`, `${defaults} of 20`, '20 runs', defaults / 20, { max: 0 }));
  rows.push(...(await perCall()));
  rows.push(await bindingCalls());
  rows.push(await roundTrip());
  rows.push(...(await idleMemory()));
  return rows;
}

/** The rows as the bench prints them. */
export function printPoolRows(rows: PoolRow[]): void {
  for (const entry of rows) {
    console.log(`  ${entry.workload.padEnd(82)} ${entry.figure.padStart(12)} / ${entry.floor.padStart(18)} = ${entry.ratio.toFixed(2).padStart(5)}  ${entry.target.padEnd(6)} ${entry.pass ? 'PASS' : 'MISS'}`);
  }
}

if (import.meta.main) {
  console.log('issue 19, pool and wire rows: figure / floor measured in this run = ratio, target');
  printPoolRows(await poolRows());
}
