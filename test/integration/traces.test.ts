// OpenTelemetry spans of runs in real carriers, exported by the SDK's in-memory exporter registered
// in this process: the run's span is a child of the caller's active span (or of the traceparent it
// was handed: through the library, and through `ptc serve` started here), binding calls, the
// approval wait and the carrier's boot are children of the run's span, and the attributes say the
// mode, the sandbox, warm, status, failure kind and the carrier's CPU and memory.
// launch: source only (test/run.ts runs it once): the spans are the host's, made the same whatever
// starts the carrier.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PassThrough } from 'node:stream';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, trace, type Span } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { binding, createRuntime } from '../../host/index.ts';
import { serve } from '../../host/serve/index.ts';
import { createMcpServer } from '../../host/mcp/server.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { tracingApi, useTracingApi, type TracingApi } from '../../host/execution/tracing.ts';
import { decodeJson } from '../../wire/decode.ts';
import { valueOf } from '../helpers/assert.ts';
import { repoRoot } from '../helpers/runtime.ts';

const exporter = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
const tracer = trace.getTracer('traces.test');

test.before.each(() => exporter.reset());

/** Runs `fn` inside a span of the test's own, the caller's; resolves with its result and that span. */
async function asCaller<T>(fn: () => Promise<T>): Promise<{ result: T; caller: Span }> {
  return tracer.startActiveSpan('caller', async (caller) => {
    try {
      return { result: await fn(), caller };
    } finally {
      caller.end();
    }
  });
}

const named = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => span.name === name);
const one = (name: string): ReadableSpan => {
  const found = named(name);
  assert.is(found.length, 1, `spans named ${name}: ${exporter.getFinishedSpans().map((span) => span.name).join(', ')}`);
  return found[0]!;
};
const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

test('the run is a child of the caller, and each binding call, the approval wait and the boot a child of the run', async () => {
  const runtime = createRuntime({ prestartCarrier: false, timeoutMs: 20_000 });
  try {
    const spec = runtime.resolve({
      // The busy loop spends CPU the run's span reports (at least one clock tick of /proc's).
      program: 'const a = await lookup("x"); const b = await lookup("y"); await mail.send(a + b); const t = Date.now(); while (Date.now() - t < 300) {} return a + b',
      bindings: { lookup: async (key: string) => key.toUpperCase(), mail: { send: binding(async () => 'sent', { approval: true }) } },
    });
    const { result, caller } = await asCaller(() => runtime.run(spec, { onApproval: () => true }));
    assert.equal(valueOf(result), 'XY');
    const run = one('ptc.run');
    assert.is(run.spanContext().traceId, caller.spanContext().traceId);
    assert.is(parentOf(run), caller.spanContext().spanId);
    const runId = run.spanContext().spanId;
    const lookups = named('ptc.binding lookup');
    assert.is(lookups.length, 2);
    assert.equal(lookups.map((span) => span.attributes), [
      { 'ptc.binding.name': 'lookup', 'ptc.binding.sequence': 1, 'ptc.binding.status': 'ok' },
      { 'ptc.binding.name': 'lookup', 'ptc.binding.sequence': 2, 'ptc.binding.status': 'ok' },
    ]);
    const send = one('ptc.binding mail.send');
    const approval = one('ptc.approval');
    const boot = one('ptc.carrier.boot');
    for (const span of [...lookups, send, approval, boot]) assert.is(parentOf(span), runId, `${span.name} is not a child of the run`);
    assert.equal(approval.attributes, { 'ptc.binding.name': 'mail.send', 'ptc.binding.sequence': 3, 'ptc.approval.outcome': 'approved' });
    assert.is(boot.attributes['ptc.sandbox.backend'], result.sandbox.backend);
    assert.is(run.attributes['ptc.run.mode'], 'per-call');
    assert.is(run.attributes['ptc.run.status'], 'ok');
    assert.is(run.attributes['ptc.carrier.warm'], false);
    assert.is(run.attributes['ptc.sandbox.backend'], result.sandbox.backend);
    assert.is(run.attributes['ptc.sandbox.mode'], result.sandbox.mode);
    assert.is(typeof run.attributes['ptc.run.id'], 'string');
    assert.ok((run.attributes['ptc.carrier.cpu_time_ms'] as number) > 0, `cpu ${run.attributes['ptc.carrier.cpu_time_ms']}`);
    // A Node process is tens of MB resident; the attribute is the carrier tree's, not a constant.
    assert.ok((run.attributes['ptc.carrier.memory.rss_bytes'] as number) > 10 * 1024 * 1024, `rss ${run.attributes['ptc.carrier.memory.rss_bytes']}`);
    assert.is(run.status.code, 0);
  } finally {
    await runtime.dispose();
  }
});

test('a binding runs with its span active, so the spans it makes are its children', async () => {
  const runtime = createRuntime({ prestartCarrier: false, timeoutMs: 20_000 });
  try {
    const fetchLike = async (): Promise<string> => {
      const inner = tracer.startSpan('inner http call');
      inner.end();
      return 'done';
    };
    const { result } = await asCaller(() => runtime.run(runtime.resolve({ program: 'return await fetchLike()', bindings: { fetchLike } })));
    assert.equal(valueOf(result), 'done');
    assert.is(parentOf(one('inner http call')), one('ptc.binding fetchLike').spanContext().spanId);
  } finally {
    await runtime.dispose();
  }
});

test('a failed run, call and rejected approval carry their kind and an error status; a warm run has no boot span', async () => {
  const runtime = createRuntime({ executionMode: 'persistent-in-memory', timeoutMs: 20_000 });
  const owner = {};
  try {
    const first = await runtime.run(runtime.resolve({ program: '1', stateOwner: owner }));
    assert.is(first.status, 'ok');
    exporter.reset();
    const spec = runtime.resolve({
      stateOwner: owner,
      program: 'try { await broken() } catch {} try { await gated() } catch {} while (true) {}',
      timeoutMs: 500,
      bindings: { broken: async () => { throw Object.assign(new Error('no such row'), { code: 'E_ROW' }); }, gated: binding(async () => 1, { approval: true }) },
    });
    const { result } = await asCaller(() => runtime.run(spec, { onApproval: () => false }));
    assert.is(result.status, 'failed');
    const run = one('ptc.run');
    assert.is(run.attributes['ptc.run.status'], 'failed');
    assert.is(run.attributes['ptc.failure.kind'], 'timeout');
    assert.is(run.attributes['error.type'], 'timeout');
    assert.is(run.attributes['ptc.run.mode'], 'persistent-in-memory');
    assert.is(run.attributes['ptc.carrier.warm'], true);
    assert.is(run.status.code, 2);
    assert.is(named('ptc.carrier.boot').length, 0, 'a run in a live environment boots nothing');
    const broken = one('ptc.binding broken');
    assert.is(broken.attributes['ptc.binding.status'], 'failed');
    assert.is(broken.attributes['ptc.failure.kind'], 'E_ROW');
    assert.is(broken.status.message, 'no such row');
    const approval = one('ptc.approval');
    assert.is(approval.attributes['ptc.approval.outcome'], 'rejected');
    assert.is(approval.attributes['ptc.failure.kind'], 'PTC_REJECTED');
    assert.is(named('ptc.binding gated').length, 0, 'a rejected call never ran');
  } finally {
    await runtime.dispose();
  }
});

test('a binding that throws a value whose reading throws fails its span without changing what the program sees', async () => {
  const runtime = createRuntime({ prestartCarrier: false, timeoutMs: 20_000 });
  try {
    const hostile = new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('trap'); }, ownKeys() { throw new Error('trap'); } });
    const spec = runtime.resolve({ program: 'try { await bad() } catch (e) { return e.message }', bindings: { bad: async () => { throw hostile; } } });
    const { result } = await asCaller(() => runtime.run(spec));
    assert.equal(valueOf(result), 'the binding threw a value that cannot be described');
    const span = one('ptc.binding bad');
    assert.is(span.attributes['ptc.binding.status'], 'failed');
    assert.is(span.attributes['ptc.failure.kind'], 'error');
    assert.is(span.status.message, 'a thrown value that cannot be described');
  } finally {
    await runtime.dispose();
  }
});

test('a traceparent handed to run() is the run span\'s parent in place of the active context, and its tracestate is kept', async () => {
  const runtime = createRuntime({ prestartCarrier: false, timeoutMs: 20_000 });
  try {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { result } = await asCaller(() => runtime.run(runtime.resolve({ program: 'return await f()', bindings: { f: async () => 1 } }), { traceparent, tracestate: 'vendor=abc' }));
    assert.equal(valueOf(result), 1);
    const run = one('ptc.run');
    assert.is(run.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c');
    assert.is(parentOf(run), 'b7ad6b7169203331');
    assert.is(run.parentSpanContext?.isRemote, true);
    assert.is(run.spanContext().traceState?.get('vendor'), 'abc');
    assert.is(parentOf(one('ptc.binding f')), run.spanContext().spanId);
  } finally {
    await runtime.dispose();
  }
});

test('a malformed traceparent or a tracestate without one is refused, naming the value', async () => {
  const runtime = createRuntime({ prestartCarrier: false });
  try {
    const spec = runtime.resolve({ program: 'return 1' });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ traceparent: 'abc' }, /^ptc run\(\): traceparent must be of the W3C form .*, got "abc"$/],
      [{ traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01' }, /all-zero trace id/],
      [{ traceparent: '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01' }, /all-zero parent id/],
      [{ traceparent: 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }, /invalid version ff/],
      [{ traceparent: 7 }, /must be a string .*got 7$/],
      [{ tracestate: 'a=b' }, /tracestate goes with a traceparent/],
    ];
    for (const [options, message] of cases) {
      try {
        await runtime.run(spec, options as never);
        assert.unreachable(`accepted ${JSON.stringify(options)}`);
      } catch (error) {
        assert.instance(error, TypeError);
        assert.match((error as Error).message, message);
      }
    }
    assert.is(named('ptc.run').length, 0, 'a refused run starts no span');
  } finally {
    await runtime.dispose();
  }
});

test('without the OpenTelemetry API the same runs make no span and return the same results', async () => {
  const api = tracingApi() as TracingApi;
  useTracingApi(undefined);
  const runtime = createRuntime({ prestartCarrier: false, timeoutMs: 20_000 });
  try {
    const { result } = await asCaller(() => runtime.run(runtime.resolve({ program: 'return await f(2)', bindings: { f: async (x: number) => x * 2 } })));
    assert.equal(valueOf(result), 4);
    assert.equal(exporter.getFinishedSpans().map((span) => span.name), ['caller']);
  } finally {
    useTracingApi(api);
    await runtime.dispose();
  }
});

test('ptc serve: a run request\'s traceparent is its span\'s parent; its invokes are children of the run', async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const replies = new Map<unknown, Record<string, any>>();
  let waiting: (() => void) | undefined;
  let pending = '';
  output.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf('\n')) !== -1) {
      const message = decodeJson(pending.slice(0, newline)) as Record<string, any>;
      pending = pending.slice(newline + 1);
      // The client's tool answers each invoke with its arguments.
      if (message.method === 'invoke') input.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: message.params.args[0] })}\n`);
      else if (message.id !== undefined) {
        replies.set(message.id, message);
        waiting?.();
      }
    }
  });
  const reply = async (id: number): Promise<Record<string, any>> => {
    while (!replies.has(id)) await new Promise<void>((resolve) => (waiting = resolve));
    return replies.get(id)!;
  };
  const served = serve({ input, output, config: { prestartCarrier: false, timeoutMs: 20_000 }, log: () => {} });
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'run', params: { program: 'return await echo(5)', tools: [{ name: 'echo' }], traceparent } })}\n`);
  const run = await reply(1);
  assert.is(run.result?.status, 'ok', JSON.stringify(run));
  assert.is(run.result.value, 5);
  input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'run', params: { program: 'return 1', tools: [], traceparent: '00-xyz' } })}\n`);
  const refused = await reply(2);
  assert.is(refused.error?.code, -32602);
  assert.match(refused.error.message, /^run: ptc run\(\): traceparent must be of the W3C form .*, got "00-xyz"$/);
  input.end();
  await served;
  const span = one('ptc.run');
  assert.is(span.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.is(parentOf(span), '00f067aa0ba902b7');
  assert.is(parentOf(one('ptc.binding echo')), span.spanContext().spanId);
});

test('ptc mcp: the traceparent in a tools/call _meta is the run span\'s parent', async () => {
  const runtime = createRuntime({ prestartCarrier: false, discovery: true, timeoutMs: 20_000 });
  const { server, closeUpstreams } = createMcpServer(runtime, new Map());
  const client = new Client({ name: 'traces.test', version: '1' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  try {
    await server.connect(serverSide);
    await client.connect(clientSide);
    const traceparent = '00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01';
    const result = await client.callTool({ name: 'run_code', arguments: { program: 'return 6 * 7' }, _meta: { traceparent } });
    assert.is(result.isError, undefined, JSON.stringify(result));
    const span = one('ptc.run');
    assert.is(span.spanContext().traceId, '5bf92f3577b34da6a3ce929d0e0e4736');
    assert.is(parentOf(span), '10f067aa0ba902b7');
    const refused = await client.callTool({ name: 'run_code', arguments: { program: 'return 1' }, _meta: { traceparent: 'nope' } });
    assert.is(refused.isError, true);
    assert.match(JSON.stringify(refused.content), /traceparent must be of the W3C form/);
  } finally {
    await client.close();
    await server.close();
    await closeUpstreams();
    await runtime.dispose();
  }
});

test('docs/traces.md: the worked example prints the run as a child of the turn and each call as a child of the run', () => {
  const page = readFileSync(join(repoRoot, 'docs/traces.md'), 'utf8');
  const example = /<!-- tested: test\/integration\/traces\.test\.ts -->\n```js\n([\s\S]*?)\n```/.exec(page)?.[1];
  assert.ok(example, 'docs/traces.md has no example marked for this suite');
  // Its own directory, with the checkout's packages, and `ptc` meaning the library's source.
  const dir = mkdtempSync(join(tmpdir(), 'ptc-traces-doc-'));
  try {
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'example.mjs'), example.replace("from 'ptc'", `from ${JSON.stringify(join(repoRoot, 'host/index.ts'))}`));
    const run = spawnSync(process.execPath, [join(dir, 'example.mjs')], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    assert.is(run.stderr, '');
    assert.is(run.status, 0);
    const lines = run.stdout.split('\n');
    assert.ok(lines.includes('value: 15'), run.stdout);
    assert.is(lines.filter((line) => line === 'ptc.binding weather <- ptc.run').length, 2, run.stdout);
    assert.ok(lines.some((line) => line.startsWith('ptc.run <- agent turn {')), run.stdout);
    assert.match(run.stdout, /'ptc\.run\.status': 'ok'/);
    assert.ok(lines.includes('agent turn <- (root)'), run.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
