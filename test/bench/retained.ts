// Retained environments (executionMode 'persistent-in-memory') for `npm run bench`, in the same
// style as run.ts: a warm round trip against a raw fd-3 pipe round trip, the idle RSS of one
// carrier against a bare idle `node`, and 100 owners at once. Misses are reported, never fatal.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRuntime, type Runtime, type RuntimeConfig } from '../../host/index.ts';
import { rawPipe } from './floors.ts';
import { judge, mean, median, ms, p90, pad, SETTLE_MS } from './stats.ts';

const BIN = join(import.meta.dirname, '..', '..', 'dist', 'ptc');
const NODE = process.execPath;
// Unconfined: these sections measure the carrier itself (its pid must be the host's view of it,
// which a bubblewrap pid namespace would hide); section 8 measures what confinement adds.
const RETAINED: RuntimeConfig = { executionMode: 'persistent-in-memory', policy: { mode: 'full-access' } };
const NODE_REPL: RuntimeConfig = { ...RETAINED, replScoped: false };
const IDLE_MS = 500;

// ---- helpers ----

const mb = (kb: number): string => `${(kb / 1024).toFixed(1)} MB`.padStart(10);
const message = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split('\n')[0]!;


/** Runs a program for an owner and returns its value, throwing on any failure. */
async function value(runtime: Runtime, program: string, stateOwner: object): Promise<unknown> {
  const result = await runtime.run(runtime.resolve({ program, stateOwner }));
  if (result.status !== 'ok') throw new Error(`run(${JSON.stringify(program)}) failed: ${result.failure.kind}: ${result.failure.message}`);
  return result.value;
}

/** A /proc/<pid>/<file> field in kB (0 when missing, as for a zombie). */
function procKb(pid: number, file: 'status' | 'smaps_rollup', field: string): number {
  const line = readFileSync(`/proc/${pid}/${file}`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm'));
  return line ? Number(line[1]) : 0;
}

/** VmRSS and its anonymous and file-backed parts (the executable's pages are file-backed and shared between processes). */
function rss(pid: number): { total: number; anon: number; file: number } {
  return { total: procKb(pid, 'status', 'VmRSS'), anon: procKb(pid, 'status', 'RssAnon'), file: procKb(pid, 'status', 'RssFile') };
}

/** The pids of every process below this one (carriers run in their own process groups, still our children). */
function descendants(): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while listing
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (let queue = [process.pid]; queue.length > 0; ) {
    const children = parents.get(queue.shift()!) ?? [];
    found.push(...children);
    queue.push(...children);
  }
  return found;
}

// ---- measurements ----

/** 5. `1` through run() for a warm owner against one raw pipe round trip, one sample of each per round. */
async function roundTrips(): Promise<void> {
  const warmups = 20;
  const iterations = 300;
  console.log(`\n5. retained run() of \`1\` on a warm environment vs one raw fd-3 round trip (p50 / p90 of ${iterations} after ${warmups} warm-ups, interleaved)`);
  const pipe = await rawPipe();
  const runtimes = [
    ['run() scoped REPL', createRuntime(RETAINED)],
    ['run() replScoped: false', createRuntime(NODE_REPL)],
  ] as const;
  const cases = new Map<string, () => Promise<unknown>>([['floor: raw pipe', pipe.roundTrip]]);
  for (const [name, runtime] of runtimes) {
    const stateOwner = {};
    cases.set(name, async () => {
      const got = await value(runtime, '1', stateOwner);
      if (got !== 1) throw new Error(`run("1") returned ${JSON.stringify(got)}, expected 1`);
    });
  }
  const samples = new Map([...cases.keys()].map((name) => [name, [] as number[]]));
  const errors = new Map<string, string>();
  for (let round = 0; round < warmups + iterations; round++) {
    const names = [...cases.keys()];
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length]!;
      const start = performance.now();
      try {
        await cases.get(name)!();
      } catch (error) {
        errors.set(name, message(error));
        cases.delete(name);
        continue;
      }
      if (round >= warmups) samples.get(name)!.push(performance.now() - start);
    }
  }
  await pipe.close();
  await Promise.all(runtimes.map(([, runtime]) => runtime.dispose()));
  const floor = samples.get('floor: raw pipe')!;
  for (const [name, own] of samples) {
    const error = errors.get(name);
    if (error !== undefined) {
      console.log(`${pad(name)}error: ${error}`);
      continue;
    }
    const line = `${pad(name)}${ms(median(own), 3)}${ms(p90(own), 3)}`;
    if (own === floor) console.log(line);
    else {
      const row = { row: 'c', what: `retained round trip of 1, p50, ${name.replace('run() ', '')}`, figure: ms(median(own), 3).trim(), floor: `${ms(median(floor), 3).trim()} pipe` };
      console.log(`${line}   p50 < 1 ms ${median(own) < 1 ? 'PASS' : 'MISS'}   ${judge(median(own) / median(floor), { max: 3 }, row)}`);
    }
  }
}

type Idle = { pid: number; stop: () => Promise<unknown>; stripped?: boolean };

/** RSS of a process after `IDLE_MS` of idling: the median of 3 fresh processes, and how many of them stripped TypeScript. */
async function idleRss(start: () => Promise<Idle>): Promise<ReturnType<typeof rss> & { stripped: number }> {
  const samples: Array<ReturnType<typeof rss>> = [];
  let stripped = 0;
  for (let i = 0; i < 3; i++) {
    const idle = await start();
    await sleep(IDLE_MS);
    samples.push(rss(idle.pid));
    if (idle.stripped) stripped++;
    await idle.stop();
  }
  return { ...samples.sort((a, b) => a.total - b.total)[1]!, stripped };
}
const parts = ({ anon, file }: ReturnType<typeof rss>): string => `(anon ${mb(anon).trim()}, file ${mb(file).trim()})`;

/** 6. One retained environment's carrier, idle after a trivial run, against a bare idle `node`. */
async function idleMemory(): Promise<void> {
  console.log(`\n6. RSS of one retained carrier idle ${IDLE_MS} ms after a run vs an idle \`node -e "setInterval(() => {}, 1000)"\` (median of 3)`);
  const floor = await idleRss(async () => {
    const child = spawn(NODE, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await once(child, 'spawn');
    return { pid: child.pid!, stop: () => (child.kill(), once(child, 'exit')) };
  });
  console.log(`${pad('floor: idle node')}${mb(floor.total)}   ${parts(floor)}`);
  const variants: Array<[string, RuntimeConfig]> = [
    ['source', RETAINED],
    ...(existsSync(BIN) ? [['embedded', { ...RETAINED, launch: { kind: 'embedded', executable: BIN } }] as [string, RuntimeConfig]] : []),
    ['source, Node REPL', NODE_REPL],
  ];
  for (const [name, config] of variants) {
    try {
      const own = await idleRss(async () => {
        const runtime = createRuntime({ ...config, prestartCarrier: false });
        const owner = {};
        try {
          // A source carrier whose compile cache (NODE_COMPILE_CACHE) missed loads Node's TypeScript stripper, ~30 MB more.
          const got = await value(runtime, `[process.pid, process.moduleLoadList.some((m) => m.includes('amaro'))]`, owner);
          const [pid, stripped] = Array.isArray(got) ? got : [];
          if (typeof pid !== 'number') throw new Error(`run() of the pid program returned ${JSON.stringify(got)}`);
          return { pid, stripped: stripped === true, stop: () => runtime.dispose() };
        } catch (error) {
          await runtime.dispose();
          throw error;
        }
      });
      const cold = own.stripped > 0 ? `; TS stripper loaded in ${own.stripped} of 3 (compile cache cold)` : '';
      const row = { row: 'b', what: `idle retained carrier RSS, ${name}`, figure: mb(own.total).trim(), floor: `${mb(floor.total).trim()} node` };
      console.log(`${pad(`carrier ${name}`)}${mb(own.total)}   ${judge(own.total / floor.total, { max: 1.3 }, row)}  ${parts(own)}${cold}`);
    } catch (error) {
      console.log(`${pad(`carrier ${name}`)}error: ${message(error)}`);
    }
  }
}

/** The median of 15 sequential `node -e 0` starts: the process floor of section 7. */
async function bareNodeStart(): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 15; i++) {
    await sleep(SETTLE_MS);
    const start = performance.now();
    const child = spawn(NODE, ['-e', '0'], { stdio: 'ignore' });
    const [code] = await once(child, 'close');
    if (code !== 0) throw new Error(`node -e 0 exited with ${code}`);
    samples.push(performance.now() - start);
  }
  return median(samples);
}

/** 7. 100 owners declare and then read a variable concurrently; all carriers end on release. */
async function manyOwners(): Promise<void> {
  const count = 100;
  console.log(`\n7. ${count} retained owners at once, scoped REPL, source carrier: the first run's wall / ${count} vs \`node -e 0\` (median of 15, just before)`);
  const floor = await bareNodeStart();
  console.log(`${pad('floor: node -e 0')}${ms(floor)}`);
  const before = new Set(descendants());
  if (before.size > 0) console.log(`  note: ${before.size} child processes were already running; they are left out`);
  const ours = (): number[] => descendants().filter((pid) => !before.has(pid));
  // No spare carrier, so that after release no child process should remain.
  const runtime = createRuntime({ ...RETAINED, prestartCarrier: false });
  const owners = Array.from({ length: count }, () => ({}));
  const phase = async (label: string, program: (i: number) => string, expect: (i: number) => unknown, judged: boolean): Promise<void> => {
    const latencies: number[] = [];
    const failures: string[] = [];
    const start = performance.now();
    await Promise.all(
      owners.map(async (owner, i) => {
        const begun = performance.now();
        try {
          const got = await value(runtime, program(i), owner);
          if (got !== expect(i)) throw new Error(`owner ${i} got ${JSON.stringify(got)}, expected ${JSON.stringify(expect(i))}`);
        } catch (error) {
          failures.push(message(error));
        }
        latencies.push(performance.now() - begun);
      }),
    );
    const wall = performance.now() - start;
    const failed = failures.length === 0 ? 'all values checked' : `${failures.length} failed, first: ${failures[0]}`;
    console.log(`${pad(label)}wall ${ms(wall).trim()}, per owner mean ${ms(mean(latencies)).trim()} (wall / ${count} ${ms(wall / count, 2).trim()}); ${failed}`);
    if (!judged) return;
    if (failures.length > 0) return console.log(`${pad('')}no ratio: runs failed`);
    const row = { row: 'f', what: `first run of ${count} new owners at once, wall / ${count}`, figure: ms(wall / count, 2).trim(), floor: `${ms(floor).trim()} node` };
    console.log(`${pad('wall / 100 vs node -e 0')}${ms(wall / count, 2)}   ${judge(wall / count / floor, { max: 2 }, row)}`);
  };
  await phase('var n = <i> (new)', (i) => `var n = ${i}`, () => undefined, true);
  await phase('n (warm)', () => 'n', (i) => i, false);
  const pids = ours();
  const total = pids.reduce((sum, pid) => sum + procKb(pid, 'status', 'VmRSS'), 0);
  const pss = pids.reduce((sum, pid) => sum + procKb(pid, 'smaps_rollup', 'Pss'), 0);
  const each = (kb: number): string => mb(kb / Math.max(1, pids.length)).trim();
  console.log(`${pad('RSS of all carriers')}${mb(total).trim()} in ${pids.length} processes, ${each(total)} each (PSS, shared pages split: ${mb(pss).trim()}, ${each(pss)} each)`);
  const start = performance.now();
  await Promise.all(owners.map((owner) => runtime.release(owner)));
  const released = performance.now() - start;
  // The carriers should be gone when release() resolves; otherwise wait up to 2 s and say how long it took.
  let left = ours();
  const lingering = left.length;
  while (left.length > 0 && performance.now() - start - released < 2000) {
    await sleep(50);
    left = ours();
  }
  const after = ms(performance.now() - start - released).trim();
  const gone =
    lingering === 0 ? 'no child processes left'
    : left.length === 0 ? `${lingering} child processes outlived release(), gone ${after} later`
    : `NOT GONE: ${left.length} child processes left ${after} after release() (pids ${left.slice(0, 5).join(', ')}...)`;
  console.log(`${pad('release all')}${ms(released).trim()}; ${gone}`);
  await runtime.dispose();
}

/** Sections 5 to 7 of the bench. */
export async function retained(wanted: (section: number) => boolean): Promise<void> {
  if (wanted(5)) await roundTrips();
  if (wanted(6)) await idleMemory();
  if (wanted(7)) await manyOwners();
}
