// search() and describe() in real carriers (per launch: the index stays on the host, so a remote
// carrier finds tools the same way): a program finds a tool by words, reads its declaration and
// calls it; the runtime's discovery setting, its guidance, and the request errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { toolCatalog } from '../../host/index.ts';
import { createTestRuntime } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';
import { REAL_TOOLS } from '../fixtures/discovery/tools.ts';

// Every real tool is a binding that answers with its own path and arguments.
const bindings: Record<string, Record<string, (args: unknown) => Promise<unknown>>> = {};
for (const tool of REAL_TOOLS) {
  const [space, name] = tool.name.split('.') as [string, string];
  (bindings[space] ??= {})[name] = async (args) => ({ called: tool.name, args });
}

test('a program finds a tool with search(), reads it with describe() and calls it', async () => {
  const runtime = createTestRuntime({ discovery: true });
  try {
    assert.match(runtime.executionInstructions, 'search("words") finds tools');
    const program = `
      const { matches, truncated } = await search('post a message to a slack channel', { limit: 3 });
      const best = matches[0];
      const text = await describe(best.path);
      const [space, name] = best.path.split('.');
      const reply = await globalThis[space][name]({ channel: 'C1', text: 'hi' });
      return { best, truncated, declares: text.includes('function ' + name + '('), reply };`;
    const value = valueOf(await runtime.run(runtime.resolve({ program, bindings, tools: toolCatalog(REAL_TOOLS) })));
    assert.equal(value, {
      best: { path: 'slack.slack_post_message', kind: 'tool', summary: 'Post a new message to a Slack channel' },
      truncated: true,
      declares: true,
      reply: { called: 'slack.slack_post_message', args: { channel: 'C1', text: 'hi' } },
    });
  } finally {
    await runtime.dispose();
  }
});

test('without tools, search() knows the bindings by name; a failed describe() is a BindingError', async () => {
  const runtime = createTestRuntime({ discovery: true });
  try {
    const program = `
      const found = (await search('invoice')).matches.map((match) => match.path);
      const failure = await describe('nothing.here').catch((error) => [error instanceof BindingError, error.binding, error.code]);
      return { found, text: await describe('billing.sendInvoice'), failure };`;
    const value = valueOf(await runtime.run(runtime.resolve({ program, bindings: { billing: { sendInvoice: async () => 1, listInvoices: async () => [] }, weather: async () => 'sun' } })));
    assert.equal(value, {
      found: ['billing.sendInvoice', 'billing.listInvoices'],
      text: 'declare namespace billing {\n  function sendInvoice(...args: unknown[]): Promise<unknown>;\n}\n',
      failure: [true, 'describe', 'PTC_UNKNOWN_TOOL'],
    });
  } finally {
    await runtime.dispose();
  }
});

test('without discovery a program has no search or describe, and tools are refused; with it a binding cannot take their names', async () => {
  const plain = createTestRuntime();
  try {
    assert.not.match(plain.executionInstructions, 'search(');
    assert.equal(valueOf(await plain.run(plain.resolve({ program: 'return [typeof search, typeof describe]', bindings: { ping: async () => 1 } }))), ['undefined', 'undefined']);
    assert.throws(() => plain.resolve({ program: '', tools: [] }), /^ptc request: tools are what search\(\) and describe\(\) read; they need the runtime's discovery: true$/);
  } finally {
    await plain.dispose();
  }
  const runtime = createTestRuntime({ discovery: true, prestartCarrier: false });
  try {
    assert.throws(() => runtime.resolve({ program: '', bindings: { search: async () => 1 } }), /binding name "search" is taken by discovery \(the runtime's discovery: true\); name it search_/);
    assert.throws(() => runtime.resolve({ program: '', bindings: { describe: { x: async () => 1 } } }), /binding name "describe" is taken by discovery/);
    assert.throws(() => runtime.resolve({ program: '', bindings: { a: async () => 1 }, tools: [{ name: 'a' }, { name: 'b' }] }), /ptc request: tools lists b, which is not a binding/);
    assert.throws(() => runtime.resolve({ program: '', tools: { name: 'a' } as never }), /ptc request: tools must be an array of tool schemas or a toolCatalog\(\), got \{ name: 'a' \}/);
  } finally {
    await runtime.dispose();
  }
  assert.throws(() => createTestRuntime({ discovery: 'yes' as never }), /ptc config: discovery must be a boolean, got 'yes'/);
});

test.run();
