// The journal through the built binary: `ptc serve` with a journal is killed (SIGKILL) while a
// run waits for approval, and a new server resumes it without invoking the answered tool again;
// `ptc runs` lists the runs and one run's calls, as text and as JSON.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';
import { ServeClient, type Message } from '../helpers/serve-client.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const dir = mkdtempSync(join(tmpdir(), 'ptc-journal-cli-'));
const journal = join(dir, 'runs.db');
const invoked: string[] = [];

function server(onNotification: (client: ServeClient, message: Message) => void): ServeClient {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const client = new ServeClient(BIN, ['serve']);
  client.onInvoke = (message) => {
    invoked.push(`${message.params.name}(${JSON.stringify(message.params.args)})`);
    client.send({ jsonrpc: '2.0', id: message.id, result: message.params.name === 'count' ? 4 : `closed ${message.params.args[0]}` });
  };
  client.onNotification = (message) => onNotification(client, message);
  return client;
}

const config = { timeoutMs: 30_000, journal, policy: { mode: 'full-access' } };
const tools = [{ name: 'count' }, { name: 'close' }];

test('ptc serve: a run waiting for approval survives kill -9 of the server; resume does not invoke the answered tool again', async () => {
  let killed!: () => void;
  const gone = new Promise<void>((resolve) => (killed = resolve));
  const first = server((client, message) => {
    if (message.method !== 'approval') return;
    client.child.once('exit', () => killed());
    client.child.kill('SIGKILL');
  });
  await first.request('initialize', { protocolVersion: 1, config });
  void first.request('run', { runId: 'job', program: 'const n = await count(); inspect(n); return await close(n)', tools, approval: ['close'] });
  await gone;
  assert.equal(invoked, ['count([])']);

  const asked: Message[] = [];
  const second = server((client, message) => {
    if (message.method !== 'approval') return;
    asked.push(message.params);
    void client.request('approve', { runId: message.params.runId, sequence: message.params.sequence });
  });
  try {
    await second.request('initialize', { protocolVersion: 1, config });
    const listed = await second.request('runs', {});
    assert.equal(listed.result.runs.map((run: Message) => [run.runId, run.status]), [['job', 'waiting']]);
    const reply = await second.request('resume', { runId: 'job', tools, approval: ['close'] });
    assert.is(reply.result.status, 'ok', JSON.stringify(reply));
    assert.is(reply.result.value, 'closed 4');
    assert.equal(reply.result.output, [{ type: 'text', text: '4\n', stream: 'stdout' }]);
    assert.equal(asked, [{ runId: 'job', sequence: 2, kind: 'call', name: 'close', args: [4] }]);
    assert.equal(invoked, ['count([])', 'close([4])']);
    const calls = await second.request('calls', { runId: 'job' });
    assert.equal(calls.result.calls.map((call: Message) => [call.sequence, call.binding, call.state]), [[1, 'count', 'done'], [2, 'close', 'done']]);
    const again = await second.request('resume', { runId: 'job', tools });
    assert.equal(again.error, { code: -32602, message: 'run: ptc resume(): run "job" has finished (ok); only a run that never finished can be resumed' });
  } finally {
    assert.is(await second.close(), 0, second.stderr);
  }
});

test('ptc runs lists the journal\'s runs, and one run\'s calls, as text and as JSON', () => {
  const list = spawnSync(BIN, ['runs', '--journal', journal], { encoding: 'utf8' });
  assert.is(list.status, 0, list.stderr);
  assert.match(list.stdout, /^job {2}ok {7}\d{4}-\d\d-\d\dT[\d:.]+Z {2}attempts 2 {2}const n = await count\(\); inspect\(n\); return await close\(n\)\n$/);
  const json = JSON.parse(spawnSync(BIN, ['runs', '--journal', journal, '--json'], { encoding: 'utf8' }).stdout);
  assert.equal(json.map((run: Message) => [run.runId, run.status, run.result.value]), [['job', 'ok', 'closed 4']]);
  const calls = spawnSync(BIN, ['runs', '--journal', journal, 'job'], { encoding: 'utf8' });
  assert.is(calls.stdout, '#1  count()  done  → 4\n#2  close(4)  done  → "closed 4"  [approved by a person]\n', 'the approved call says who approved it');
  const unknown = spawnSync(BIN, ['runs', '--journal', journal, 'nope'], { encoding: 'utf8' });
  assert.equal([unknown.status, unknown.stderr], [2, 'ptc: calls(): the journal has no run "nope"\n']);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
