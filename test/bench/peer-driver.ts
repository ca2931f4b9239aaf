// The in-process peers of test/bench/peers.ts, in a child of their own: isolated-vm needs Node's
// --no-node-snapshot, which the bench's own process does not run with. Reads one peer name a
// line ("isolated-vm", "quickjs"), evaluates `1+1` in a fresh isolate or context of it, and
// answers with the milliseconds that took (creation, evaluation and disposal), or with an error.
import { createInterface } from 'node:readline';

type Run = () => Promise<number> | number;

async function load(name: string): Promise<Run> {
  if (name === 'isolated-vm') {
    const { default: ivm } = (await import('isolated-vm')) as { default: typeof import('isolated-vm') };
    return () => {
      const isolate = new ivm.Isolate({ memoryLimit: 64 });
      const context = isolate.createContextSync();
      const value = context.evalSync('1+1') as number;
      isolate.dispose();
      return value;
    };
  }
  if (name === 'quickjs') {
    const { getQuickJS } = await import('quickjs-emscripten');
    const quickjs = await getQuickJS();
    return () => {
      const vm = quickjs.newContext();
      const handle = vm.unwrapResult(vm.evalCode('1+1'));
      const value = vm.getNumber(handle);
      handle.dispose();
      vm.dispose();
      return value;
    };
  }
  throw new Error(`unknown peer ${JSON.stringify(name)}`);
}

const peers = new Map<string, Run>();
for await (const line of createInterface({ input: process.stdin })) {
  try {
    let run = peers.get(line);
    if (run === undefined) {
      run = await load(line);
      peers.set(line, run);
    }
    const start = performance.now();
    const value = await run();
    const elapsed = performance.now() - start;
    if (value !== 2) throw new Error(`${line} evaluated 1+1 to ${JSON.stringify(value)}`);
    process.stdout.write(`${JSON.stringify({ ms: elapsed })}\n`);
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ error: (error as Error).message.split('\n')[0] })}\n`);
  }
}
