// createRuntime and resolve(): the reference's configuration table, validation that names the field
// and quotes the value, request resolution, and caller misuse (non-specs, calls after dispose()).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolve as resolvePath } from 'node:path';
import { createRuntime, type RunSpec } from '../../host/index.ts';

/** Asserts that `run` throws an Error whose message contains every one of `parts`. */
function throwsNaming(run: () => unknown, parts: string[]): void {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  assert.instance(thrown, Error, `expected a throw naming ${parts.join(', ')}`);
  for (const part of parts) assert.ok((thrown as Error).message.includes(part), `"${(thrown as Error).message}" should name ${part}`);
}

/** Same as throwsNaming for a promise-returning call; a synchronous throw counts too. */
async function rejectsNaming(run: () => Promise<unknown>, parts: string[]): Promise<void> {
  let thrown: unknown;
  try {
    await run();
  } catch (error) {
    thrown = error;
  }
  assert.instance(thrown, Error, `expected a rejection naming ${parts.join(', ')}`);
  for (const part of parts) assert.ok((thrown as Error).message.includes(part), `"${(thrown as Error).message}" should name ${part}`);
}

// The reference's configuration table.
const REFERENCE_DEFAULTS = {
  executionMode: 'per-call',
  scriptPersistence: false,
  replScoped: false,
  timeoutMs: 120_000,
  maxTimeoutMs: 600_000,
  maxOutputBytes: 67_108_864,
  maxOldGenerationSizeMb: 512,
  maxMessageBytes: 134_217_728,
  maxPendingCalls: 128,
  stopGraceMs: 3_000,
  graceMs: 3_000,
};

const NUMERIC_FIELDS = ['timeoutMs', 'maxTimeoutMs', 'maxOutputBytes', 'maxOldGenerationSizeMb', 'maxMessageBytes', 'maxPendingCalls', 'stopGraceMs', 'graceMs'];

test('defaults equal the reference table', async () => {
  const runtime = createRuntime();
  for (const [field, value] of Object.entries(REFERENCE_DEFAULTS)) {
    assert.is((runtime.config as unknown as Record<string, unknown>)[field], value, field);
  }
  assert.is(runtime.config.launch, undefined);
  await runtime.dispose();
});

test('unknown config fields throw naming the field', () => {
  const table: Array<[Record<string, unknown>, string]> = [
    [{ timeout: 5000 }, 'timeout'],
    [{ maxOutputByte: 10 }, 'maxOutputByte'],
    [{ timeoutMs: 5000, sandbox: { backend: 'auto', requires: 'full' } }, 'requires'],
    [{ launch: { kind: 'embedded', bootstrapPath: '/opt/bootstrap.mjs' } }, 'launch.bootstrapPath'],
  ];
  for (const [config, field] of table) throwsNaming(() => createRuntime(config as never), [`"${field}"`]);
});

test('every numeric field rejects negative, non-integer and string values, naming field and value', () => {
  for (const field of NUMERIC_FIELDS) {
    for (const value of [-1, 1.5, '1000', Number.NaN, Number.POSITIVE_INFINITY]) {
      throwsNaming(() => createRuntime({ [field]: value } as never), [field, String(value)]);
    }
  }
});

test('fields that must be positive reject zero', () => {
  for (const field of ['timeoutMs', 'maxTimeoutMs', 'maxOutputBytes', 'maxPendingCalls']) {
    throwsNaming(() => createRuntime({ [field]: 0 } as never), [field, '0']);
  }
});

test('invalid combinations and unsupported modes throw naming the field and the value', () => {
  const table: Array<[string, Record<string, unknown>, string[]]> = [
    ['timeoutMs above the default maxTimeoutMs', { timeoutMs: 700_000 }, ['timeoutMs', '700000', 'maxTimeoutMs']],
    ['timeoutMs above a configured maxTimeoutMs', { timeoutMs: 2_000, maxTimeoutMs: 1_000 }, ['timeoutMs', '2000', 'maxTimeoutMs', '1000']],
    ['scriptPersistence with persistent-in-memory', { executionMode: 'persistent-in-memory', scriptPersistence: true }, ['scriptPersistence', 'persistent-in-memory']],
    ['replScoped true with vm-script', { executionMode: 'vm-script', replScoped: true }, ['replScoped', 'vm-script']],
    ['unknown executionMode', { executionMode: 'fast' }, ['executionMode', 'fast']],
    ['scriptPersistence true', { scriptPersistence: true }, ['scriptPersistence', 'true']],
    ['scriptPersistence not a boolean', { scriptPersistence: 'yes' }, ['scriptPersistence', 'yes']],
    ['replScoped true', { replScoped: true }, ['replScoped', 'true']],
    ['launch not an object', { launch: 'embedded' }, ['launch', 'embedded']],
    ['sandbox not an object', { sandbox: true }, ['sandbox', 'true']],
    ['an unknown sandbox backend', { sandbox: { backend: 'docker' } }, ['backend', 'docker']],
    ['an unknown enforcement level', { sandbox: { require: 'strict' } }, ['require', 'strict']],
    ['an unknown policy mode', { policy: { mode: 'write-everything' } }, ['policy.mode', 'write-everything']],
    ['launch with an unknown kind', { launch: { kind: 'ssh' } }, ['launch.kind', 'ssh']],
    ['launch with an empty executable', { launch: { kind: 'embedded', executable: '' } }, ['launch.executable', "''"]],
    ['launch with a non-string bootstrapPath', { launch: { kind: 'node-script', executable: '/usr/bin/node', bootstrapPath: 7 } }, ['launch.bootstrapPath', '7']],
    ['node-script launch without executable', { launch: { kind: 'node-script' } }, ['launch.executable', 'node-script']],
  ];
  for (const [, config, parts] of table) throwsNaming(() => createRuntime(config as never), parts);
});

test('deadlines past what a Node timer holds (2^31-1 ms) are refused, naming the field and the value', async () => {
  for (const field of ['timeoutMs', 'maxTimeoutMs', 'stopGraceMs', 'graceMs']) {
    const config = field === 'timeoutMs' ? { timeoutMs: 2 ** 31, maxTimeoutMs: 2 ** 31 } : { [field]: 2 ** 31 };
    throwsNaming(() => createRuntime(config as never), [field, String(2 ** 31), '2147483647']);
  }
  // The limit itself is accepted, and a request asking for more is capped to it.
  const runtime = createRuntime({ maxTimeoutMs: 2 ** 31 - 1, graceMs: 2 ** 31 - 1, stopGraceMs: 2 ** 31 - 1 });
  assert.is(runtime.resolve({ program: '', timeoutMs: 2 ** 40 }).timeoutMs, 2 ** 31 - 1);
  await runtime.dispose();
});

test('run() refuses a spec whose deadline was changed past maxTimeoutMs, and still accepts null', async () => {
  const runtime = createRuntime({ timeoutMs: 20_000, maxTimeoutMs: 30_000, prestartCarrier: false });
  const spec = runtime.resolve({ program: 'return 1' });
  for (const timeoutMs of [Number.POSITIVE_INFINITY, 2 ** 31, 30_001, 1.5, -5]) {
    await rejectsNaming(() => runtime.run({ ...spec, timeoutMs }), ['spec.timeoutMs', String(timeoutMs), 'maxTimeoutMs (30000)']);
  }
  const result = await runtime.run({ ...spec, timeoutMs: null });
  assert.equal(result.status === 'ok' && result.value, 1);
  await runtime.dispose();
});

test('launch paths are fixed at configuration time against the host cwd and PATH, not each run\'s cwd', async () => {
  const runtime = createRuntime({ prestartCarrier: false, launch: { kind: 'node-script', executable: 'node', bootstrapPath: 'dist/bootstrap.mjs' } });
  const launch = runtime.config.launch as { executable: string; bootstrapPath: string };
  assert.ok(launch.executable.startsWith('/') && launch.executable.endsWith('/node'), launch.executable);
  assert.is(launch.bootstrapPath, resolvePath(process.cwd(), 'dist/bootstrap.mjs'));
  const embedded = createRuntime({ prestartCarrier: false, launch: { kind: 'embedded', executable: './bin/ptc' } });
  assert.is((embedded.config.launch as { executable: string }).executable, resolvePath(process.cwd(), 'bin/ptc'));
  await Promise.all([runtime.dispose(), embedded.dispose()]);
  throwsNaming(() => createRuntime({ launch: { kind: 'node-script', executable: 'no-such-node-ptc' } }), ['launch.executable', 'no-such-node-ptc', 'PATH']);
});

test('a config that is not an object throws', () => {
  for (const config of [null, 'per-call', 42, []]) throwsNaming(() => createRuntime(config as never), ['config']);
});

test('the timeout descriptor is readonly and reports the default and maximum', async () => {
  for (const [config, expected] of [
    [{}, { defaultMs: 120_000, maxMs: 600_000 }],
    [{ timeoutMs: 5_000, maxTimeoutMs: 9_000 }, { defaultMs: 5_000, maxMs: 9_000 }],
  ] as const) {
    const runtime = createRuntime(config);
    assert.equal({ ...runtime.timeout }, expected);
    assert.ok(Object.isFrozen(runtime.timeout));
    assert.throws(() => {
      (runtime.timeout as { defaultMs: number }).defaultMs = 1;
    }, TypeError);
    assert.is(runtime.timeout.defaultMs, expected.defaultMs);
    await runtime.dispose();
  }
});

test('programFormat and executionInstructions describe async function bodies and inspect()', async () => {
  const runtime = createRuntime();
  assert.is(runtime.programFormat, 'async-function');
  assert.ok(runtime.executionInstructions.includes('Use inspect(...values) to display output. Do not use console.'));
  await runtime.dispose();
});

test('resolve() defaults cwd to process.cwd() and resolves a relative cwd from it', async () => {
  const runtime = createRuntime();
  assert.is(runtime.resolve({ program: '' }).cwd, process.cwd());
  assert.is(runtime.resolve({ program: '', cwd: 'sub/dir' }).cwd, resolvePath(process.cwd(), 'sub/dir'));
  assert.is(runtime.resolve({ program: '', cwd: '/tmp' }).cwd, '/tmp');
  await runtime.dispose();
});

test('resolve() fills the deadline: omitted is the default, numbers are capped, null is none', async () => {
  const runtime = createRuntime({ timeoutMs: 5_000, maxTimeoutMs: 9_000 });
  const table: Array<[number | null | undefined, number | null]> = [
    [undefined, 5_000],
    [1, 1],
    [7_000, 7_000],
    [9_000, 9_000],
    [9_001, 9_000],
    [10 ** 9, 9_000],
    [null, null],
  ];
  for (const [requested, expected] of table) {
    const request = requested === undefined ? { program: '' } : { program: '', timeoutMs: requested };
    assert.is(runtime.resolve(request).timeoutMs, expected, `timeoutMs ${requested}`);
  }
  await runtime.dispose();
});

test('resolve() rejects invalid deadlines naming timeoutMs and the value', async () => {
  const runtime = createRuntime();
  for (const value of [0, -1, 1.5, 'x', Number.NaN, Number.POSITIVE_INFINITY, true]) {
    throwsNaming(() => runtime.resolve({ program: '', timeoutMs: value as never }), ['timeoutMs', String(value)]);
  }
  await runtime.dispose();
});

test('resolve() rejects unknown and invalid request fields, naming them', async () => {
  const runtime = createRuntime();
  const table: Array<[Record<string, unknown>, string[]]> = [
    [{ program: '', timeout: 5 }, ['"timeout"']],
    [{ program: '', stateOwner: 'agent-1' }, ['stateOwner', 'agent-1']],
    [{ program: 42 }, ['program', '42']],
    [{}, ['program']],
    [{ program: '', cwd: 5 }, ['cwd', '5']],
    [{ program: '', discardCompletion: 'yes' }, ['discardCompletion', 'yes']],
    [{ program: '', filename: '' }, ['filename']],
  ];
  for (const [request, parts] of table) throwsNaming(() => runtime.resolve(request as never), parts);
  throwsNaming(() => runtime.resolve(null as never), ['request']);
  await runtime.dispose();
});

test('resolve() returns a frozen spec that run() executes in a real carrier', async () => {
  const runtime = createRuntime({ timeoutMs: 20_000 });
  const spec = runtime.resolve({ program: 'return 6 * 7' });
  assert.ok(Object.isFrozen(spec));
  const result = await runtime.run(spec);
  assert.is(result.status, 'ok');
  assert.is(result.status === 'ok' && result.value, 42);
  await runtime.dispose();
});

test('run() with something that is not a resolved spec throws', async () => {
  const runtime = createRuntime();
  const spec = runtime.resolve({ program: 'return 1' });
  const without = (field: keyof RunSpec): Record<string, unknown> => {
    const copy: Record<string, unknown> = { ...spec };
    delete copy[field];
    return copy;
  };
  const table: unknown[] = [
    null,
    'return 1',
    { program: 'return 1' },
    without('bindings'),
    without('cwd'),
    without('timeoutMs'),
    without('discardCompletion'),
    without('filename'),
    { ...spec, cwd: 'relative/dir' },
    { ...spec, timeoutMs: 0 },
  ];
  for (const candidate of table) await rejectsNaming(() => runtime.run(candidate as RunSpec), ['spec']);
  await runtime.dispose();
});

// A deliberate difference from the reference, whose run(spec) "does not fill missing values": a
// spec built by hand may leave out the fields resolve() adds for the newer options, whose absence
// has one safe reading, and run() reads them so; it does not choose a sandbox policy for a spec
// that names none (issue 33; README, Differences from the reference).
test('run() reads a spec without oneTime, cpuTimeMs, stateOwner or onPolicyChange; one without a policy throws naming it', async () => {
  const runtime = createRuntime({ timeoutMs: 20_000, policy: { mode: 'full-access' } });
  const spec = runtime.resolve({ program: 'return process.cwd()' });
  const bare: Record<string, unknown> = { ...spec };
  for (const field of ['oneTime', 'cpuTimeMs', 'stateOwner', 'onPolicyChange']) delete bare[field];
  const result = await runtime.run(bare as unknown as RunSpec);
  assert.is(result.status, 'ok', JSON.stringify(result));
  assert.is(result.status === 'ok' && result.value, spec.cwd);
  assert.is(result.sandbox.mode, 'full-access');
  const { policy: _policy, ...unconfined } = spec;
  const expected = "ptc run(): spec.policy is missing: run() does not choose the sandbox a spec runs in; pass the spec resolve() returned, which names the request's policy or the runtime's default";
  await rejectsNaming(() => runtime.run(unconfined as unknown as RunSpec), [expected]);
  await rejectsNaming(() => runtime.run({ ...spec, policy: 'full-access' } as unknown as RunSpec), ["ptc run(): spec.policy is not a policy ('full-access')"]);
  await runtime.dispose();
});

test('a policy with an unknown field or a bad value throws in createRuntime and resolve(), not at every run', async () => {
  const table: Array<[Record<string, unknown>, string[]]> = [
    [{ mode: 'read-only', writeableRoots: ['/tmp'] }, ['"writeableRoots"']],
    [{ mode: 'workspace-write', network: 'yes' }, ['network', "'yes'"]],
    [{ mode: 'workspace-write', network: { allow: 'example.com' } }, ['network', 'allow']],
    [{ mode: 'full-access', network: false }, ['network: false', 'full-access']],
    [{ mode: 'workspace-write', workspaceRoot: 7 }, ['workspaceRoot', '7']],
    [{ mode: 'workspace-write', writableRoots: '/tmp' }, ['writableRoots', "'/tmp'"]],
    [{ mode: 'workspace-write', writableRoots: ['/tmp', ''] }, ['writableRoots[1]', "''"]],
  ];
  for (const [policy, parts] of table) throwsNaming(() => createRuntime({ policy } as never), ['policy', ...parts]);
  const runtime = createRuntime({ prestartCarrier: false });
  for (const [policy, parts] of table) throwsNaming(() => runtime.resolve({ program: 'return 1', policy } as never), ['request: policy', ...parts]);
  // A path that exists only on the far side, or not yet, is still checked when a run uses it.
  const result = await runtime.run(runtime.resolve({ program: 'return 1', policy: { mode: 'read-only' } }));
  assert.is(result.status, 'ok');
  await runtime.dispose();
});

test('a run whose cwd does not exist, or is a file, throws naming the cwd (not a workspaceRoot the caller never gave)', async () => {
  const runtime = createRuntime({ prestartCarrier: false });
  const missing = resolvePath('/nonexistent-ptc-cwd');
  for (const policy of [undefined, { mode: 'read-only' as const }, { mode: 'full-access' as const }]) {
    await rejectsNaming(() => runtime.run(runtime.resolve({ program: 'return 1', cwd: missing, ...(policy ? { policy } : {}) })), [`cwd (the default workspaceRoot) '${missing}' does not exist`]);
  }
  const file = new URL(import.meta.url).pathname;
  await rejectsNaming(() => runtime.run(runtime.resolve({ program: 'return 1', cwd: file })), ['cwd (the default workspaceRoot) must be a directory', file]);
  await runtime.dispose();
});

test('the runtime object is frozen: timeout, programFormat and the methods cannot be replaced', async () => {
  const runtime = createRuntime({ prestartCarrier: false });
  assert.ok(Object.isFrozen(runtime));
  assert.ok(Object.isFrozen(runtime.timeout));
  assert.throws(() => { (runtime as { timeout: unknown }).timeout = { defaultMs: 1, maxMs: 1 }; }, /read only/);
  assert.throws(() => { (runtime as { programFormat: unknown }).programFormat = 'repl'; }, /read only/);
  assert.equal(runtime.timeout, { defaultMs: 120_000, maxMs: 600_000 });
  assert.is(runtime.programFormat, 'async-function');
  await runtime.dispose();
});

test('resolve() and run() after dispose() throw', async () => {
  const runtime = createRuntime();
  const spec = runtime.resolve({ program: 'return 1' });
  await runtime.dispose();
  await runtime.dispose();
  throwsNaming(() => runtime.resolve({ program: 'return 1' }), ['dispose']);
  await rejectsNaming(() => runtime.run(spec), ['dispose']);
});

test.run();
