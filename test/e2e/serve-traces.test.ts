// `ptc serve` and a caller's W3C trace context, as a client sees them: from source under Node with
// an SDK registered by `node --import` (test/fixtures/traces/register.mjs) the run's span is a
// child of the traceparent the run request carried and the tool call a child of the run; the
// built binary checks and accepts the same request and makes no span, since it loads no
// OpenTelemetry API and takes no `--import` through NODE_OPTIONS. Assumes `npm run build` has run.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ServeClient } from '../helpers/serve-client.ts';
import { repoRoot } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const REGISTER = join(repoRoot, 'test', 'fixtures', 'traces', 'register.mjs');
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const dir = mkdtempSync(join(tmpdir(), 'ptc-serve-traces-'));

interface Line {
  registered?: number;
  name?: string;
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  attributes?: Record<string, unknown>;
}

const linesOf = (file: string): Line[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Line) : []);

/** A run with a traceparent and one tool call, and a run whose traceparent is malformed. */
async function exercise(client: ServeClient): Promise<void> {
  const run = await client.request('run', { program: 'return await echo(5)', tools: [{ name: 'echo' }], traceparent: TRACEPARENT, tracestate: 'vendor=abc' });
  assert.equal(run.result?.value, [5], JSON.stringify(run));
  const bad = await client.request('run', { program: 'return 1', tools: [], traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7' });
  assert.is(bad.error?.code, -32602);
  assert.match(bad.error.message, /^run: ptc run\(\): traceparent must be of the W3C form .*, got "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"$/);
  assert.is(await client.close(), 0);
}

test('source under node --import with an SDK: the run span is a child of the request\'s traceparent, the tool call a child of the run', async () => {
  const spans = join(dir, 'source.jsonl');
  await exercise(new ServeClient(process.execPath, ['--import', REGISTER, join(repoRoot, 'host', 'cli', 'bin.ts'), 'serve'], { PTC_TEST_SPANS: spans }));
  const lines = linesOf(spans);
  assert.ok(lines[0]?.registered !== undefined, 'the SDK was not registered');
  const runs = lines.filter((line) => line.name === 'ptc.run');
  assert.is(runs.length, 1, 'the refused run made a span');
  const run = runs[0]!;
  assert.is(run.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.is(run.parentSpanId, '00f067aa0ba902b7');
  assert.is(run.attributes?.['ptc.run.status'], 'ok');
  const echo = lines.find((line) => line.name === 'ptc.binding echo');
  assert.is(echo?.parentSpanId, run.spanId);
});

test('dist/ptc: the traceparent is checked and accepted, and no span is made, even with an SDK offered through NODE_OPTIONS', async () => {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const spans = join(dir, 'binary.jsonl');
  await exercise(new ServeClient(BIN, ['serve'], { PTC_TEST_SPANS: spans, NODE_OPTIONS: `--import ${REGISTER}` }));
  assert.equal(linesOf(spans), [], 'the binary ran the SDK registration or made spans');
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
