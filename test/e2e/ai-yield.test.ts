// `ptc/ai` runs that yield, in a real AI SDK loop with the SDK's mock model: the code tool with
// yieldAfterMs answers "still running" with the output so far, the model calls the wait tool
// until the result comes, and every line reaches it exactly once; cancel stops a spinning one.
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { codeTool } from '../../host/ai/index.ts';

const USAGE = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } };
const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-ai-yield-')));
const code = codeTool({ tools: {}, policy: { mode: 'workspace-write', workspaceRoot: workspace }, timeoutMs: 60_000, yieldAfterMs: 400 });
test.after(async () => {
  await code.dispose();
  rmSync(workspace, { recursive: true, force: true });
});

/** A model that calls code with `program`, then wait (with `waitInput`) while the last result says still running, then answers. */
function waitingModel(program: string, waitInput: Record<string, unknown> = {}) {
  const read: string[] = [];
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      const messages = options.prompt as Array<{ role: string; content: Array<{ type: string; output?: { value: unknown } }> }>;
      const results = messages.filter((m) => m.role === 'tool').flatMap((m) => m.content.filter((part) => part.type === 'tool-result'));
      const call = (toolName: string, input: unknown) => ({
        content: [{ type: 'tool-call' as const, toolCallId: `call-${results.length}`, toolName, input: JSON.stringify(input) }],
        finishReason: { unified: 'tool-calls' as const, raw: undefined },
        usage: USAGE,
        warnings: [],
      });
      if (results.length === 0) return call('code', { program });
      const last = String(results.at(-1)!.output!.value);
      read.push(last);
      const running = /^\(still running as runId "([^"]+)"/m.exec(last);
      if (running !== null) return call('wait', { runId: running[1], ...waitInput });
      return { content: [{ type: 'text' as const, text: 'done' }], finishReason: { unified: 'stop' as const, raw: undefined }, usage: USAGE, warnings: [] };
    },
  });
  return { model, read };
}

test('the code tool yields after yieldAfterMs; the model waits until the result, reading every line once', async () => {
  const program = 'for (let i = 0; i < 8; i++) { console.log("line " + i); await new Promise((r) => setTimeout(r, 200)); }\nreturn 8;';
  const { model, read } = waitingModel(program, { timeoutMs: 300 });
  const result = await generateText({ model, tools: { code, wait: code.waitTool }, stopWhen: isStepCount(40), prompt: 'Count.' });
  assert.is(result.text, 'done');
  assert.ok(read.length >= 2, read.join('\n---\n'));
  assert.is(result.steps[0]!.toolResults[0]!.toolName, 'code');
  assert.is((result.steps[0]!.toolResults[0]!.output as { status: string }).status, 'running');
  const printed = read.map((text) => text.replace(/\(still running as runId [^\n]*\)$/, '')).join('');
  assert.is(printed, `${Array.from({ length: 8 }, (_, i) => `line ${i}\n`).join('')}8`);
});

test('wait with cancel stops a spinning program, which the model reads as aborted', async () => {
  const { model, read } = waitingModel('console.log("spinning"); while (true) {}', { cancel: true });
  const result = await generateText({ model, tools: { code, wait: code.waitTool }, stopWhen: isStepCount(5), prompt: 'Spin.' });
  assert.is(result.text, 'done');
  assert.match(read.at(-1)!, /abort/);
  const last = result.steps.at(-2)!.toolResults[0]!;
  assert.is(last.toolName, 'wait');
  assert.is((last.output as { status: string; failure: { kind: string } }).failure.kind, 'abort');
});

test.run();
