// Remote carriers for `npm run bench`, over the loopback sshd of test/helpers/sshd.sh (skipped
// without one). Floors go through a master connection of the bench's own, as the runtime's does:
// `ssh host true` for a per-call run, a line echoed by a remote `cat` for a round trip and for
// binding calls. The local per-call run is measured in the same rounds.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRuntime, type Runtime, type RuntimeConfig } from '../../host/index.ts';
import { sshLaunch, sshServer } from '../helpers/runtime.ts';
import { interleave, median, ms, p90, pad, ratio } from './stats.ts';

const NODE = '/usr/bin/node';

function verdict(value: number, max: number): string {
  return `ratio ${value.toFixed(2).padStart(5)}  target ≤ ${max}  ${value <= max ? 'PASS' : 'MISS'}`;
}

async function ok(runtime: Runtime, request: Parameters<Runtime['resolve']>[0]): Promise<void> {
  const result = await runtime.run(runtime.resolve(request));
  if (result.status !== 'ok') throw new Error(`${result.failure.kind}: ${result.failure.message}`);
}

/** A line echo through a remote `cat` on the bench's master connection: the raw round trip. */
function echo(args: string[], destination: string): { child: ChildProcessWithoutNullStreams; roundTrip(line: string): Promise<void> } {
  const child = spawn('ssh', [...args, destination, 'exec cat'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let waiting: (() => void) | undefined;
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    buffered += text;
    if (buffered.includes('\n')) {
      buffered = buffered.slice(buffered.lastIndexOf('\n') + 1);
      waiting?.();
    }
  });
  return {
    child,
    roundTrip: (line) => new Promise((resolve) => {
      waiting = resolve;
      child.stdin.write(`${line}\n`);
    }),
  };
}

export async function remote(): Promise<void> {
  console.log('\n10. remote carriers over SSH (loopback sshd; floors through the same kind of shared connection)');
  const server = sshServer();
  if (server === undefined) return console.log('  skipped: no sshd (eval "$(bash test/helpers/sshd.sh start)")');
  const dir = mkdtempSync(join(tmpdir(), 'ptc-bench-ssh-'));
  const socket = join(dir, 'control');
  const base = ['-F', server.config, '-p', String(server.port), '-o', 'BatchMode=yes', '-T'];
  const channel = [...base, '-S', socket, '-o', 'ControlMaster=no'];
  const master = spawn('ssh', [...base, '-M', '-S', socket, '-o', 'ControlPersist=no', '-N', server.destination], { stdio: 'ignore' });
  const runtimes: Runtime[] = [];
  const make = (config: RuntimeConfig): Runtime => {
    const runtime = createRuntime({ policy: { mode: 'full-access' }, ...config });
    runtimes.push(runtime);
    return runtime;
  };
  try {
    for (let i = 0; i < 100; i++) {
      const check = spawn('ssh', [...channel, '-O', 'check', server.destination], { stdio: 'ignore' });
      if ((await once(check, 'close'))[0] === 0) break;
      await sleep(50);
    }
    const sshTrue = async (): Promise<void> => {
      const child = spawn('ssh', [...channel, server.destination, 'true'], { stdio: 'ignore' });
      const [code] = await once(child, 'close');
      if (code !== 0) throw new Error(`ssh true exited ${code}`);
    };
    const overSsh = make({ launch: sshLaunch({ node: NODE }) });
    const local = make({ launch: { kind: 'node-script', executable: NODE, bootstrapPath: join(import.meta.dirname, '../../dist/bootstrap.mjs') } });

    console.log('   per-call run() of `return 1` (median / p90 of 30 after 3 warm-ups, interleaved)');
    const perCall = await interleave({
      'floor: ssh host true': sshTrue,
      'local node-script run()': () => ok(local, { program: 'return 1' }),
      'ssh run()': () => ok(overSsh, { program: 'return 1' }),
    });
    const floor = median(perCall['floor: ssh host true']!);
    const localRun = median(perCall['local node-script run()']!);
    const sshRun = median(perCall['ssh run()']!);
    console.log(`${pad('floor: ssh host true')}${ms(floor)}${ms(p90(perCall['floor: ssh host true']!))}`);
    console.log(`${pad('local node-script run()')}${ms(localRun)}${ms(p90(perCall['local node-script run()']!))}`);
    console.log(`${pad('ssh run()')}${ms(sshRun)}${ms(p90(perCall['ssh run()']!))}   vs ssh true: ${verdict(ratio(sshRun, floor), 1.5)}`);
    console.log(`${pad('')}${' '.repeat(20)}   vs local:    ${verdict(ratio(sshRun, localRun), 3)}`);

    console.log('   retained round trip of `1` (persistent-in-memory, one owner) vs a line echoed by a remote cat (median / p90 of 200)');
    const retained = make({ launch: sshLaunch({ node: NODE }), executionMode: 'persistent-in-memory' });
    const owner = {};
    const raw = echo(channel, server.destination);
    const trips = await interleave({
      'floor: raw ssh round trip': () => raw.roundTrip('ping'),
      'ssh retained run()': () => ok(retained, { program: '1', stateOwner: owner }),
    }, { warmups: 10, iterations: 200 });
    const rawTrip = median(trips['floor: raw ssh round trip']!);
    const retainedTrip = median(trips['ssh retained run()']!);
    console.log(`${pad('floor: raw ssh round trip')}${ms(rawTrip, 2)}${ms(p90(trips['floor: raw ssh round trip']!), 2)}`);
    console.log(`${pad('ssh retained run()')}${ms(retainedTrip, 2)}${ms(p90(trips['ssh retained run()']!), 2)}   ${verdict(ratio(retainedTrip, rawTrip), 2)}`);

    console.log('   sequential `await ping(i)` calls/s over SSH vs raw ping-pong through a remote cat (2000 each)');
    const n = 2000;
    let start = 0;
    const ping = async (i: number): Promise<number> => {
      if (i === 0) start = performance.now();
      return i;
    };
    const calls = make({ launch: sshLaunch({ node: NODE }) });
    await ok(calls, { program: `for (let i = 0; i < ${n}; i++) await ping(i)`, bindings: { ping }, timeoutMs: null });
    const ptcRate = (n - 1) / ((performance.now() - start) / 1000);
    const rawStart = performance.now();
    for (let i = 0; i < n; i++) await raw.roundTrip(String(i));
    const rawRate = n / ((performance.now() - rawStart) / 1000);
    raw.child.stdin.end();
    const share = ptcRate / rawRate;
    console.log(`${pad('floor: raw ping-pong')}${`${rawRate.toFixed(0)} /s`.padStart(10)}`);
    console.log(`${pad('ssh binding calls')}${`${ptcRate.toFixed(0)} /s`.padStart(10)}   ${(share * 100).toFixed(0)}% of the floor (no target in the issue; the local figure's target is ≥ 50%)`);
  } finally {
    await Promise.all(runtimes.map((runtime) => runtime.dispose()));
    master.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
