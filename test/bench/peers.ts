// 17. Peer runtimes, measured in the same run as ptc and interleaved with it, against the same
// floors: a whole process running a trivial program (deno, workerd, Anthropic's sandbox runtime
// srt, and `ptc run`) against `node -e 0`; a fresh isolate or context evaluating `1+1` in a
// library (isolated-vm, quickjs-emscripten; ptc's own row is the pool's) against the same spawn.
// The peers are devDependencies of the bench only. A peer that cannot install or run here is
// reported as skipped with the reason, never stood in for.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { interleave, median, ms, pad, ratio } from './stats.ts';
import { skippedRow, targetRow, type TargetRow } from './targets.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const MODULES = join(ROOT, 'node_modules');
const BIN = join(ROOT, 'dist', 'ptc');
const NODE = process.execPath;

/** Runs a process to its end with stdout and stderr kept (workerd logs its test to stderr); rejects unless it exits 0. */
async function quiet(file: string, args: string[], cwd?: string): Promise<string> {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(cwd !== undefined ? { cwd } : {}) });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`${file.split('/').pop()} exited with ${code}: ${out.trim().split('\n').slice(-2).join(' ')}`);
  return out;
}

/** The first installed file among the registry's platform packages of a peer. */
function platformBinary(scope: string, prefix: string, file: string): string | undefined {
  const dir = join(MODULES, scope);
  if (!existsSync(dir)) return undefined;
  for (const name of readdirSync(dir).filter((entry) => entry.startsWith(prefix))) {
    const path = join(dir, name, file);
    if (existsSync(path)) return path;
  }
  return undefined;
}

interface WholeProcessPeer {
  name: string;
  command: [string, string[]] | { skipped: string };
}

function wholeProcessPeers(work: string): WholeProcessPeer[] {
  const deno = platformBinary('@deno', `${process.platform}-${process.arch}`, 'deno');
  const workerd = platformBinary('@cloudflare', `workerd-${process.platform}-`, 'bin/workerd');
  writeFileSync(join(work, 'worker.js'), "export default { async test() { if (1 + 1 !== 2) throw new Error('1+1'); } };\n");
  writeFileSync(
    join(work, 'config.capnp'),
    [
      'using Workerd = import "/workerd/workerd.capnp";',
      'const config :Workerd.Config = ( services = [ (name = "main", worker = .trivial) ] );',
      'const trivial :Workerd.Worker = ( modules = [ (name = "worker", esModule = embed "worker.js") ], compatibilityDate = "2024-01-01" );',
      '',
    ].join('\n'),
  );
  // srt's own defaults are refused without a settings file: no network, the work directory writable.
  writeFileSync(join(work, 'srt.json'), JSON.stringify({ network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowWrite: [work], denyWrite: [] } }));
  const srt = join(MODULES, '@anthropic-ai', 'sandbox-runtime', 'dist', 'cli.js');
  return [
    { name: 'deno eval 1+1', command: deno !== undefined ? [deno, ['eval', '1+1']] : { skipped: 'the deno package has no binary for this platform installed (npm ci)' } },
    { name: 'workerd test (1+1)', command: workerd !== undefined ? [workerd, ['test', join(work, 'config.capnp')]] : { skipped: 'the workerd package has no binary for this platform installed (npm ci)' } },
    { name: 'srt node -e 0', command: !existsSync(srt) ? { skipped: '@anthropic-ai/sandbox-runtime is not installed (npm ci)' } : srtMissing() ?? [NODE, [srt, '-s', join(work, 'srt.json'), NODE, '-e', '0']] },
  ];
}

/** What srt needs on Linux and this machine lacks: it runs bwrap, scans the work tree with ripgrep
 * (`rg`) and bridges its network proxy with socat, each looked up on PATH. Undefined when all are there. */
function srtMissing(): { skipped: string } | undefined {
  if (process.platform !== 'linux') return undefined;
  const onPath = (name: string): boolean => (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, name)));
  const missing = [['bwrap', 'bubblewrap'], ['rg', 'ripgrep'], ['socat', 'socat']].filter(([command]) => !onPath(command!));
  if (missing.length === 0) return undefined;
  return { skipped: `srt needs ${missing.map(([command]) => command).join(' and ')} on PATH, which this machine lacks (Debian/Ubuntu: apt-get install ${missing.map(([, pkg]) => pkg).join(' ')})` };
}

/** A child running test/bench/peer-driver.ts, asked for one evaluation at a time. */
class Driver {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #lines: Interface;
  readonly #waiting: Array<(line: string) => void> = [];

  constructor() {
    this.#child = spawn(NODE, ['--no-node-snapshot', join(import.meta.dirname, 'peer-driver.ts')], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stderr.resume();
    this.#lines = createInterface({ input: this.#child.stdout });
    this.#lines.on('line', (line) => this.#waiting.shift()?.(line));
  }

  async evaluate(peer: string): Promise<number> {
    const line = await new Promise<string>((resolve) => {
      this.#waiting.push(resolve);
      this.#child.stdin.write(`${peer}\n`);
    });
    const answer = JSON.parse(line) as { ms?: number; error?: string };
    if (answer.error !== undefined) throw new Error(answer.error);
    return answer.ms!;
  }

  async close(): Promise<void> {
    this.#child.stdin.end();
    await once(this.#child, 'close');
  }
}

/** Section 17; returns the peers' rows (references: no target), or why each was skipped. */
export async function peers(): Promise<TargetRow[]> {
  console.log('\n17. peers, interleaved with ptc in one run (median of 15 after 2 warm-ups)');
  const work = mkdtempSync(join(tmpdir(), 'ptc-bench-peers-'));
  const rows: TargetRow[] = [];
  const driver = new Driver();
  try {
    // Whole processes: each peer is tried once first, so one that cannot run here is skipped with its reason.
    const processes = wholeProcessPeers(work);
    const program = join(work, 'return1.ts');
    writeFileSync(program, 'return 1+1\n');
    const cases: Record<string, () => Promise<unknown>> = { floor: () => quiet(NODE, ['-e', '0']) };
    if (existsSync(BIN)) cases['ptc run return1.ts --json'] = () => quiet(BIN, ['run', program, '--json'], work);
    for (const peer of processes) {
      if ('skipped' in peer.command) {
        rows.push(skippedRow(`whole process, trivial program: ${peer.name}`, peer.command.skipped));
        continue;
      }
      const [file, args] = peer.command;
      try {
        await quiet(file, args, work);
        cases[peer.name] = () => quiet(file, args, work);
      } catch (error) {
        rows.push(skippedRow(`whole process, trivial program: ${peer.name}`, (error as Error).message));
      }
    }
    console.log('  whole process, trivial program, vs `node -e 0`:');
    const samples = await interleave(cases, { warmups: 2, iterations: 15 });
    const floor = median(samples.floor!);
    console.log(`${pad('floor: node -e 0')}${ms(floor)}`);
    for (const name of Object.keys(cases).filter((key) => key !== 'floor')) {
      const own = median(samples[name]!);
      console.log(`${pad(name)}${ms(own)}   ratio ${ratio(own, floor).toFixed(2).padStart(5)}`);
      if (name.startsWith('ptc ')) continue;
      rows.push(targetRow(`whole process, trivial program: ${name}`, ms(own).trim(), `${ms(floor).trim()} node -e 0`, ratio(own, floor), undefined));
    }

    // Libraries: a fresh isolate or context per evaluation, against the same Node spawn.
    const libraries: Record<string, () => Promise<unknown>> = { floor: () => quiet(NODE, ['-e', '0']) };
    const times: Record<string, number[]> = {};
    for (const peer of ['isolated-vm', 'quickjs']) {
      try {
        await driver.evaluate(peer);
        times[peer] = [];
        libraries[peer] = async () => times[peer]!.push(await driver.evaluate(peer));
      } catch (error) {
        // isolated-vm is a native addon: without a prebuilt one for this platform and Node it needs a
        // node-gyp build, which npm does not run for it (package.json allowScripts).
        rows.push(skippedRow(`library, fresh context, 1+1: ${peer}`, `it does not load here: ${(error as Error).message}`));
      }
    }
    if (Object.keys(libraries).length > 1) {
      console.log('  a fresh isolate or context evaluating 1+1 in a library (timed inside the driver), vs spawning `node -e 0`:');
      const spawned = await interleave(libraries, { warmups: 2, iterations: 15 });
      const spawnFloor = median(spawned.floor!);
      console.log(`${pad('floor: node -e 0 spawn')}${ms(spawnFloor)}`);
      for (const peer of Object.keys(times)) {
        const own = median(times[peer]!);
        console.log(`${pad(peer)}${ms(own, 2)}   ratio ${ratio(own, spawnFloor).toFixed(3).padStart(6)}`);
        rows.push(targetRow(`library, fresh context, 1+1: ${peer}`, ms(own, 2).trim(), `${ms(spawnFloor).trim()} node spawn`, ratio(own, spawnFloor), undefined));
      }
    }
    return rows;
  } finally {
    await driver.close();
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { printTargets } = await import('./targets.ts');
  printTargets(await peers());
}
