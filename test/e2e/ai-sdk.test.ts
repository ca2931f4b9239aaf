// `ptc/ai` in a real AI SDK loop: generateText and streamText with the SDK's own mock language
// model (ai/test) call the code tool with a program, ptc runs it in a real carrier under the
// sandbox with the ToolSet's execute functions as bindings, and the model's next step reads the
// result. Failures, a timeout, an aborted generation and a retained conversation, as a user
// would meet them.
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { generateText, isStepCount, jsonSchema, streamText, tool, type ToolExecutionOptions } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { codeTool, type CodeTool } from '../../host/ai/index.ts';
import { declarations } from '../../host/index.ts';

const USAGE = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } };
const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-ai-sdk-')));
const made: CodeTool[] = [];
test.after(async () => {
  for (const t of made) await t.dispose();
  rmSync(workspace, { recursive: true, force: true });
});

/** What the tools saw: each call's input and options. */
const seen: Array<{ tool: string; input: unknown; options: ToolExecutionOptions<unknown> }> = [];

const tools = {
  getUser: tool({
    description: 'Look up a user by id.',
    inputSchema: z.object({ id: z.number().int().min(1).describe('The user id') }),
    outputSchema: z.object({ id: z.number(), name: z.string(), team: z.string() }),
    execute: async (input, options) => {
      seen.push({ tool: 'getUser', input, options: options as ToolExecutionOptions<unknown> });
      return { id: input.id, name: `user ${input.id}`, team: input.id % 2 ? 'red' : 'blue' };
    },
  }),
  listOrders: tool({
    description: 'Orders of a user.',
    inputSchema: z.object({ userId: z.number(), status: z.enum(['open', 'closed']).default('open') }),
    execute: async (input, options) => {
      seen.push({ tool: 'listOrders', input, options: options as ToolExecutionOptions<unknown> });
      return [1, 2, 3].map((n) => ({ id: input.userId * 10 + n, total: n * 7, status: input.status }));
    },
  }),
  notify: tool({
    description: 'Send a note to a team.',
    inputSchema: jsonSchema<{ team: string; text: string }>({ type: 'object', properties: { team: { type: 'string' }, text: { type: 'string' } }, required: ['team', 'text'] }),
    execute: async function* (input, options) {
      seen.push({ tool: 'notify', input, options: options as ToolExecutionOptions<unknown> });
      yield { queued: true };
      yield { sent: true, team: input.team };
    },
  }),
  wait: tool({
    description: 'Waits until the call is aborted.',
    inputSchema: z.object({}),
    execute: (_input, options) =>
      new Promise((_resolve, reject) => {
        seen.push({ tool: 'wait', input: _input, options: options as ToolExecutionOptions<unknown> });
        options.abortSignal?.addEventListener('abort', () => reject(new Error('aborted')));
      }),
  }),
  clientSide: tool({ description: 'Answered by the client.', inputSchema: z.object({ q: z.string() }) }),
};

function codeToolFor(options: Partial<Parameters<typeof codeTool>[0]> = {}): CodeTool {
  const t = codeTool({ tools, policy: { mode: 'workspace-write', workspaceRoot: workspace }, timeoutMs: 30_000, ...options });
  made.push(t);
  return t;
}

/** A model that calls `code` with each program in turn, then answers with text; it keeps each step's prompt. */
function scriptedModel(programs: string[]) {
  const prompts: unknown[][] = [];
  let step = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      prompts.push(options.prompt as unknown[]);
      const program = programs[step++];
      if (program === undefined) return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage: USAGE, warnings: [] };
      return {
        content: [{ type: 'tool-call', toolCallId: `call-${step}`, toolName: 'code', input: JSON.stringify({ program }) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: USAGE,
        warnings: [],
      };
    },
  });
  return { model, prompts };
}

/** The tool-result output the model received in its last prompt. */
function lastToolOutput(prompts: unknown[][]): { type: string; value: unknown } {
  const messages = prompts.at(-1) as Array<{ role: string; content: Array<{ type: string; output?: { type: string; value: unknown } }> }>;
  const results = messages.filter((m) => m.role === 'tool').flatMap((m) => m.content.filter((part) => part.type === 'tool-result'));
  assert.ok(results.length > 0, 'the model received no tool result');
  return results.at(-1)!.output!;
}

const THREE_TOOLS = `
  const teams: Record<string, number> = {};
  for (const id of [1, 2, 3]) {
    const user = await getUser({ id });
    const orders = await listOrders({ userId: user.id });
    teams[user.team] = (teams[user.team] ?? 0) + orders.reduce((sum, o) => sum + o.total, 0);
    inspect(user.name, orders.length);
  }
  const note = await notify({ team: 'red', text: 'totals ready' });
  return { teams, note, big: 12345678901234567890n };
`;

test('generateText: the model calls code with a program over three tools; ptc runs it under the sandbox and the next step reads the result', async () => {
  seen.length = 0;
  const code = codeToolFor();
  const { model, prompts } = scriptedModel([THREE_TOOLS]);
  const result = await generateText({ model, tools: { code }, stopWhen: isStepCount(3), prompt: 'Total the orders per team.' });
  assert.is(result.text, 'done');
  assert.equal(seen.map((s) => s.tool), ['getUser', 'listOrders', 'getUser', 'listOrders', 'getUser', 'listOrders', 'notify']);
  // The tools get the code tool's call options: the call id (one per inner call), the messages, an abort signal.
  assert.equal(seen.map((s) => s.options.toolCallId), [1, 2, 3, 4, 5, 6, 7].map((n) => `call-1.${n}`));
  assert.ok(seen.every((s) => s.options.abortSignal instanceof AbortSignal && Array.isArray(s.options.messages)));
  // zod defaults apply: the program left status out.
  assert.equal(seen[1]!.input, { userId: 1, status: 'open' });
  const step = result.steps[0]!.toolResults[0]!;
  const output = step.output as { status: string; valueText: string; value: { teams: Record<string, number> }; sandbox: { backend: string; enforcement: string }; output: Array<{ text: string }> };
  assert.is(output.status, 'ok');
  assert.equal(output.value.teams, { red: 84, blue: 42 });
  assert.is(output.sandbox.backend, 'bwrap');
  assert.is(output.sandbox.enforcement, 'full');
  assert.match(output.valueText, '"big":12345678901234567890');
  const seenByModel = lastToolOutput(prompts);
  assert.is(seenByModel.type, 'text');
  assert.is(seenByModel.value, `user 1 3\nuser 2 3\nuser 3 3\n${output.valueText}`);
  assert.match(output.valueText, '"note":{"sent":true,"team":"red"}');
});

test('the description is the execution guidance plus the declarations, as declarations() writes them from the same JSON Schemas', () => {
  const code = codeToolFor();
  const description = code.description as string;
  assert.ok(description.includes(code.runtime.executionInstructions));
  const expected = declarations([
    { name: 'getUser', description: 'Look up a user by id.', inputSchema: z.toJSONSchema(tools.getUser.inputSchema as z.ZodType), outputSchema: z.toJSONSchema(tools.getUser.outputSchema as z.ZodType) },
    { name: 'listOrders', description: 'Orders of a user.', inputSchema: z.toJSONSchema(tools.listOrders.inputSchema as z.ZodType, { io: 'input' }) },
    { name: 'notify', description: 'Send a note to a team.', inputSchema: { type: 'object', properties: { team: { type: 'string' }, text: { type: 'string' } }, required: ['team', 'text'] } },
    { name: 'wait', description: 'Waits until the call is aborted.', inputSchema: z.toJSONSchema(tools.wait.inputSchema as z.ZodType) },
  ]);
  assert.match(description, /@minimum 1|min|>= 1/);
  for (const line of expected.trim().split('\n').filter((l) => /^(declare )?(async )?function|^\s+\w+\??:/.test(l))) assert.ok(description.includes(line), `missing: ${line}`);
  assert.match(description, /function getUser\(/);
  assert.match(description, /The user id/);
  assert.match(description, /cannot call them: "clientSide"/);
});

test('a failing program: the model reads the failure as ptc mcp words it, and the application gets the failure', async () => {
  const code = codeToolFor();
  const { model, prompts } = scriptedModel(['inspect("before");\nconst u = await getUser({ id: 0 });\nreturn u']);
  const result = await generateText({ model, tools: { code }, stopWhen: isStepCount(3), prompt: 'x' });
  const output = result.steps[0]!.toolResults[0]!.output as { status: string; failure: { kind: string; binding: string; code: string }; failureText: string };
  assert.is(output.status, 'failed');
  assert.is(output.failure.kind, 'exception');
  assert.is(output.failure.binding, 'getUser');
  assert.is(output.failure.code, 'INVALID_INPUT');
  const seenByModel = lastToolOutput(prompts);
  assert.is(seenByModel.type, 'error-text');
  assert.is(seenByModel.value, `before\n${output.failureText}`);
  assert.match(output.failureText, /^program failed \(exception\): invalid input for getUser: id: Too small: expected number to be >=1\n/);
  assert.match(output.failureText, /binding: getUser \(code INVALID_INPUT\)/);
});

test('a program past its deadline ends as timeout, and the tool it was waiting on is told to stop', async () => {
  seen.length = 0;
  const code = codeToolFor({ timeoutMs: 1500 });
  const { model, prompts } = scriptedModel(['await wait({}); return 1']);
  const result = await generateText({ model, tools: { code }, stopWhen: isStepCount(3), prompt: 'x' });
  const output = result.steps[0]!.toolResults[0]!.output as { failure: { kind: string; timeoutMs: number } };
  assert.is(output.failure.kind, 'timeout');
  assert.is(output.failure.timeoutMs, 1500);
  assert.match(lastToolOutput(prompts).value as string, /^program failed \(timeout\)/);
  assert.is(seen.length, 1);
  assert.is(seen[0]!.options.abortSignal!.aborted, true);
});

test('streamText aborted while the program waits on a tool: the stream ends with the abort, the run and its tool stop', async () => {
  seen.length = 0;
  const code = codeToolFor();
  const controller = new AbortController();
  const model = new MockLanguageModelV4({
    doStream: async () => ({
      stream: new ReadableStream({
        start(c) {
          c.enqueue({ type: 'tool-call', toolCallId: 'call-s', toolName: 'code', input: JSON.stringify({ program: 'await wait({}); return 1' }) });
          c.enqueue({ type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage: USAGE });
          c.close();
        },
      }),
    }),
  });
  const stream = streamText({ model, tools: { code }, stopWhen: isStepCount(3), prompt: 'x', abortSignal: controller.signal });
  const parts: string[] = [];
  const reading = (async () => {
    for await (const part of stream.fullStream) parts.push(part.type);
  })();
  while (seen.length === 0) await new Promise((r) => setTimeout(r, 20));
  controller.abort(new Error('user pressed stop'));
  await reading.catch(() => {});
  assert.ok(parts.includes('abort') || parts.includes('error'), `stream parts: ${parts.join(', ')}`);
  assert.not.ok(parts.includes('tool-result'), 'an aborted run returned no result');
  assert.is(seen[0]!.options.abortSignal!.aborted, true);
});

test('retained per conversation: a stateOwner per conversation keeps variables between tool calls, and conversations do not share them', async () => {
  const a = {};
  const b = {};
  let current: object = a;
  const code = codeToolFor({ executionMode: 'persistent-in-memory', stateOwner: () => current });
  const first = scriptedModel(['var count = 41', 'count + 1']);
  const one = await generateText({ model: first.model, tools: { code }, stopWhen: isStepCount(4), prompt: 'x' });
  assert.equal(one.steps.map((s) => (s.toolResults[0]?.output as { valueText?: string } | undefined)?.valueText), [undefined, '42', undefined]);
  current = b;
  const second = scriptedModel(['typeof count']);
  const two = await generateText({ model: second.model, tools: { code }, stopWhen: isStepCount(3), prompt: 'x' });
  assert.is((two.steps[0]!.toolResults[0]!.output as { valueText: string }).valueText, '"undefined"');
});

test('images the program displays reach the model as file parts, and the application gets them inline', async () => {
  const png = join(workspace, 'dot.png');
  // A 1x1 PNG.
  writeFileSync(png, Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64'));
  const code = codeToolFor();
  const { model, prompts } = scriptedModel([`inspect(await Image.fromFile(${JSON.stringify(png)})); return 'shown'`]);
  await generateText({ model, tools: { code }, stopWhen: isStepCount(3), prompt: 'x' });
  const seenByModel = lastToolOutput(prompts) as { type: string; value: Array<{ type: string; mediaType?: string; text?: string }> };
  assert.is(seenByModel.type, 'content');
  assert.equal(seenByModel.value.map((p) => p.type), ['file', 'text']);
  assert.is(seenByModel.value[0]!.mediaType, 'image/png');
  assert.is(seenByModel.value[1]!.text, '"shown"');
});

test('bad options are refused with the problem named', () => {
  assert.throws(() => codeTool({ tools: null as never }), /tools must be an AI SDK ToolSet \(an object of tools\), got null/);
  const shared = codeToolFor();
  assert.throws(() => codeTool({ tools, runtime: shared.runtime, timeoutMs: 5 }), /pass either runtime or runtime options, not both \(got runtime and timeoutMs\)/);
  assert.throws(() => codeTool({ tools, timeoutMs: -1 } as never), /timeoutMs/);
});

test.run();
