// 20. What tracing costs a run when @opentelemetry/api is installed and no SDK is registered (the
// case of every user who has the API through some other package): a warm retained run making ten
// binding calls, with the API loaded, against the same runs with tracing's code paths off (as
// without the package), in one runtime. Each sample is a block of runs, the two kinds alternating
// block by block, so load on the machine lands on both alike. Tracing's work is the host's, so
// the host process's CPU time per run is printed beside the wall time the row is judged on.
// `node test/bench/traces.ts` prints the row alone; tracesRows() gives it to the bench's table.
import { trace } from '@opentelemetry/api';
import { createRuntime } from '../../host/index.ts';
import { startRunTrace, tracingApi, useTracingApi, type TracingApi } from '../../host/execution/tracing.ts';
import { median } from './stats.ts';
import { targetRow, type TargetRow } from './targets.ts';

const CALLS = 10;
const PROGRAM = `let n = 0; for (let i = 0; i < ${CALLS}; i++) n += await f(i); n`;
const BLOCK = 20;
const ROUNDS = 16;

/** The row: run() with the API and no SDK ÷ run() with tracing off. */
export async function tracesRows(): Promise<TargetRow[]> {
  console.log(`\n20. tracing's cost without an SDK: a warm retained run with ${CALLS} binding calls, @opentelemetry/api loaded vs tracing off (median of ${ROUNDS} alternating blocks of ${BLOCK} runs)`);
  const api = tracingApi();
  if (api === undefined) throw new Error('@opentelemetry/api did not load: it is a devDependency of the checkout');
  // What makes "no SDK" true: the global provider is still the API's own proxy, with no delegate.
  if (trace.getTracerProvider().constructor.name !== 'ProxyTracerProvider') throw new Error('an SDK is registered in the bench process');
  const runtime = createRuntime({ executionMode: 'persistent-in-memory' });
  const owner = {};
  const run = async (): Promise<void> => {
    const result = await runtime.run(runtime.resolve({ program: PROGRAM, stateOwner: owner, bindings: { f: async (i: number) => i } }));
    if (result.status !== 'ok' || result.value !== 45) throw new Error(`the run returned ${JSON.stringify(result)}`);
  };
  const kinds: Array<[string, TracingApi | undefined]> = [['off', undefined], ['api', api]];
  const wall: Record<string, number[]> = { off: [], api: [] };
  const cpu: Record<string, number[]> = { off: [], api: [] };
  try {
    for (let i = 0; i < BLOCK; i++) await run();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [kind, loaded] of round % 2 === 0 ? kinds : [...kinds].reverse()) {
        useTracingApi(loaded);
        const cpuStart = process.cpuUsage();
        const start = performance.now();
        for (let i = 0; i < BLOCK; i++) await run();
        const used = process.cpuUsage(cpuStart);
        wall[kind]!.push((performance.now() - start) / BLOCK);
        cpu[kind]!.push((used.user + used.system) / 1000 / BLOCK);
      }
    }
  } finally {
    useTracingApi(api);
    await runtime.dispose();
  }
  const [off, on] = [median(wall.off!), median(wall.api!)];
  const [offCpu, onCpu] = [median(cpu.off!), median(cpu.api!)];
  console.log(`  tracing off                ${off.toFixed(2)} ms a run   host CPU ${offCpu.toFixed(3)} ms a run`);
  console.log(`  api loaded, no SDK         ${on.toFixed(2)} ms a run   host CPU ${onCpu.toFixed(3)} ms a run (${onCpu >= offCpu ? '+' : ''}${((onCpu - offCpu) * 1000).toFixed(0)} µs)   ratio ${(on / off).toFixed(3)}`);
  console.log(`  tracing's own work alone, a run span and ${CALLS} steps with no SDK: ${(await ownWork()).toFixed(1)} µs a run (median of 5 loops of 2,000)`);
  return [targetRow(`retained run with ${CALLS} binding calls, @opentelemetry/api and no SDK`, `${on.toFixed(2)} ms`, `${off.toFixed(2)} ms tracing off`, on / off, { max: 1.05 })];
}

/** What the run's span and its steps cost by themselves without an SDK, µs a run: the figure machine load cannot hide. */
async function ownWork(): Promise<number> {
  const loops: number[] = [];
  for (let loop = 0; loop < 5; loop++) {
    const start = performance.now();
    for (let i = 0; i < 2000; i++) {
      const trace = (await startRunTrace({ 'ptc.run.id': 'bench', 'ptc.run.mode': 'persistent-in-memory' }, undefined))!;
      for (let call = 1; call <= CALLS; call++) {
        const step = trace.step('ptc.binding f', { 'ptc.binding.name': 'f', 'ptc.binding.sequence': call });
        await step.within(async () => call);
        step.end({ 'ptc.binding.status': 'ok' });
      }
      trace.end({ status: 'ok', warm: true, sandbox: { backend: 'bwrap', mode: 'workspace-write' } });
    }
    loops.push(((performance.now() - start) * 1000) / 2000);
  }
  return median(loops);
}

if (import.meta.main) {
  const { printTargets } = await import('./targets.ts');
  printTargets(await tracesRows());
}
