// Whatever a program throws ends the run promptly as an `exception` that describes the thrown
// value, in every evaluator: a Proxy whose traps throw (never touched), a revoked Proxy, a Symbol,
// a function, a frozen object, an object whose getters throw, an error whose stack or toString
// throws; thrown directly, from a timer callback or as an unhandled rejection. A later run
// still succeeds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, RuntimeConfig, SandboxReport } from '../../host/index.ts';
import { createTestRuntime, reportLocation, withoutWarm, reportLimits } from '../helpers/runtime.ts';

const SANDBOX = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, ...reportLocation(), denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() } as SandboxReport;
const TRAPS = ['get', 'has', 'getPrototypeOf', 'ownKeys', 'getOwnPropertyDescriptor', 'apply'].map((trap) => `${trap}() { throw new Error('trap ${trap} ran'); }`).join(', ');
const HOSTILE_PROXY = `new Proxy({ a: 1 }, { ${TRAPS} })`;
const WAIT = 'await new Promise((resolve) => setTimeout(resolve, 200));';

/** [what, program, the failure's name and message (no stack: none of these carries program frames)]. */
const THROWN: Array<[string, string, string, string]> = [
  ['a Proxy whose traps throw', `throw ${HOSTILE_PROXY};`, 'Error', 'Uncaught Proxy { a: 1 }'],
  ['the same Proxy from a timer callback', `setTimeout(() => { throw ${HOSTILE_PROXY}; }); ${WAIT}`, 'Error', 'Uncaught Proxy { a: 1 }'],
  ['the same Proxy as an unhandled rejection', `Promise.reject(${HOSTILE_PROXY}); ${WAIT}`, 'Error', 'Uncaught Proxy { a: 1 }'],
  ['a frozen object from a timer callback', `setTimeout(() => { throw Object.freeze({ f: 1 }); }); ${WAIT}`, 'Error', 'Uncaught { f: 1 }'],
  ['a revoked Proxy', '{ const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy; }', 'Error', 'Uncaught <Revoked Proxy>'],
  ['a Symbol', "throw Symbol('thrown');", 'Error', 'Uncaught Symbol(thrown)'],
  ['a function', 'throw function thrower() {};', 'Error', 'Uncaught [Function: thrower]'],
  ['an object whose message and stack getters throw', "throw { get message() { throw new Error('m'); }, get stack() { throw new Error('s'); } };", 'Error', ''],
  ['an error whose stack getter and toString throw', "{ const e = new RangeError('kept'); Object.defineProperty(e, 'stack', { get() { throw new Error('s'); } }); e.toString = () => { throw e; }; throw e; }", 'RangeError', 'kept'],
  ['an object with a custom inspect that throws', "throw Object.defineProperty({ n: 1 }, Symbol.for('nodejs.util.inspect.custom'), { value() { throw new Error('custom ran'); } });", 'Error', 'Uncaught { n: 1 }'],
];

const FORMATS: Array<[string, RuntimeConfig]> = [
  ['per-call', {}],
  ['vm-script', { executionMode: 'vm-script' }],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ['Node REPL', { executionMode: 'persistent-in-memory', replScoped: false }],
];

const runtimes: Array<{ dispose(): Promise<void> }> = [];

for (const [format, config] of FORMATS) {
  const runtime = createTestRuntime({ ...config, timeoutMs: 10_000 });
  runtimes.push(runtime);
  const run = (program: string): Promise<RunResult> => runtime.run(runtime.resolve({ program }));
  const later = config.executionMode === undefined ? 'return 7;' : '7';

  for (const [what, program, name, message] of THROWN) {
    test(`${format}: ${what} is a prompt exception`, async () => {
      assert.equal(withoutWarm(await run(program)), { status: 'failed', failure: { kind: 'exception', name, message }, output: [], sandbox: SANDBOX });
      assert.equal(withoutWarm(await run(later)), { status: 'ok', value: 7, output: [], sandbox: SANDBOX });
    });
  }
}

test.after(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.dispose()));
});

test.run();
