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
import { generateText, isStepCount, jsonSchema, streamText, tool, type ToolExecutionOptions, type ToolSet } from 'ai';
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

/** Tools of which one needs approval: `executed` counts what really ran. */
function gatedTools() {
  const executed: string[] = [];
  return {
    executed,
    tools: {
      readInbox: tool({ inputSchema: z.object({}), execute: async () => (executed.push('readInbox'), ['mail 1', 'mail 2']) }),
      sendEmail: tool({ inputSchema: z.object({ to: z.string() }), needsApproval: true, execute: async ({ to }) => (executed.push(`sendEmail ${to}`), { sent: to }) }),
      archive: tool({ inputSchema: z.object({ id: z.number() }), needsApproval: async ({ id }) => id > 100, execute: async ({ id }) => (executed.push(`archive ${id}`), { archived: id }) }),
    },
  };
}

test("approvals through the AI SDK's own toolApproval: a program naming a gated tool asks first; approved, it runs once; denied, nothing runs", async () => {
  for (const approved of [true, false]) {
    const { executed, tools: gated } = gatedTools();
    const code = codeTool({ tools: gated, policy: { mode: 'workspace-write', workspaceRoot: workspace } });
    made.push(code);
    const { model, prompts } = scriptedModel(['const mails = await readInbox({}); return await sendEmail({ to: "ada@example.com" })']);
    const first = await generateText({ model, tools: { code }, toolApproval: { code: code.toolApproval }, stopWhen: isStepCount(3), prompt: 'x' });
    const request = first.content.find((part) => part.type === 'tool-approval-request') as { approvalId: string; reason?: string } | undefined;
    assert.ok(request, 'the first call ends with an approval request');
    assert.is(request.reason, 'the program calls sendEmail, which needs approval');
    assert.equal(executed, [], 'nothing ran before the person decided');
    const messages = [{ role: 'user' as const, content: 'x' }, ...first.response.messages, { role: 'tool' as const, content: [{ type: 'tool-approval-response' as const, approvalId: request.approvalId, approved }] }];
    const second = await generateText({ model, tools: { code }, toolApproval: { code: code.toolApproval }, stopWhen: isStepCount(3), messages });
    assert.is(second.text, 'done');
    if (approved) {
      assert.equal(executed, ['readInbox', 'sendEmail ada@example.com']);
      assert.match(lastToolOutput(prompts).value as string, '{"sent":"ada@example.com"}');
    } else {
      assert.equal(executed, []);
      assert.is(lastToolOutput(prompts).type, 'execution-denied');
    }
  }
});

test('a gated tool the program reaches without approval (toolApproval not wired, or a name built at run time) is refused with PTC_REJECTED and never runs', async () => {
  const { executed, tools: gated } = gatedTools();
  const code = codeTool({ tools: gated, policy: { mode: 'workspace-write', workspaceRoot: workspace } });
  made.push(code);
  for (const [program, withApproval] of [
    ['return await sendEmail({ to: "x@example.com" })', false],
    ['const name = ["send", "Email"].join(""); return await (globalThis as any)[name]({ to: "x@example.com" })', true],
  ] as const) {
    const { model } = scriptedModel([program]);
    const result = await generateText({ model, tools: { code }, ...(withApproval ? { toolApproval: { code: code.toolApproval } } : {}), stopWhen: isStepCount(3), prompt: 'x' });
    const output = result.steps[0]!.toolResults[0]!.output as { failure: { code: string; binding: string; message: string } };
    assert.is(output.failure.code, 'PTC_REJECTED');
    assert.is(output.failure.binding, 'sendEmail');
    assert.match(output.failure.message, /^sendEmail needs a person's approval, which this call of the code tool did not get/);
  }
  // A tool's own needsApproval function decides per input: archiving 7 needs nobody, 700 does.
  const { model } = scriptedModel(['const a = await archive({ id: 7 }); try { await archive({ id: 700 }); } catch (e) { return [a, e.code]; }']);
  const result = await generateText({ model, tools: { code }, stopWhen: isStepCount(3), prompt: 'x' });
  assert.is((result.steps[0]!.toolResults[0]!.output as { valueText: string }).valueText, '[{"archived":7},"PTC_REJECTED"]');
  assert.equal(executed, ['archive 7']);
  assert.throws(() => codeTool({ tools: gated, approvalRequired: ['nope'] }), /approvalRequired names "nope", which is not one of the tools \(readInbox, sendEmail, archive\)/);
});

test('a large tool set: past the description budget, the model reads namespaces and finds tools with search() and describe() in the program', async () => {
  const many: ToolSet = {};
  const areas = ['billing', 'crm', 'storage', 'deploy', 'metrics'];
  for (let i = 0; i < 2000; i++) {
    const area = areas[i % areas.length]!;
    const name = i === 1234 ? 'refund_invoice' : `${area}_operation_${i}`;
    many[name] = tool({
      description: i === 1234 ? 'Refund a paid invoice to the customer.' : `Operation ${i} of ${area}: does ${area} things with item ${i}.`,
      inputSchema: jsonSchema<{ id: string }>({ type: 'object', properties: { id: { type: 'string', description: `the ${area} item` } }, required: ['id'] }),
      execute: async ({ id }: { id: string }) => ({ tool: name, id }),
    });
  }
  const code = codeTool({ tools: many, policy: { mode: 'workspace-write', workspaceRoot: workspace } });
  made.push(code);
  const description = code.description as string;
  assert.ok(description.length < 40_000 + 4_000, `description is ${description.length} characters`);
  assert.match(description, /declare function search\(/);
  assert.match(description, /declare function describe\(/);
  assert.not.match(description, /refund_invoice/);
  const program = `
    const found = await search('refund an invoice');
    const best = found.matches[0];
    const text = await describe(best.path);
    return { path: best.path, declared: text.includes('refund_invoice('), result: await (globalThis as any)[best.path]({ id: 'inv-7' }) };
  `;
  const { model, prompts } = scriptedModel([program]);
  await generateText({ model, tools: { code }, stopWhen: isStepCount(3), prompt: 'x' });
  assert.is(lastToolOutput(prompts).value, '{"path":"refund_invoice","declared":true,"result":{"tool":"refund_invoice","id":"inv-7"}}');
  // A small set is declared in full, with no discovery globals, unless asked for.
  assert.not.match(codeToolFor().description as string, /declare function search\(/);
  const asked = codeToolFor({ discovery: true });
  assert.match(asked.description as string, /declare function search\(/);
  assert.throws(() => codeTool({ tools, descriptionBudget: -5 }), /descriptionBudget must be a non-negative integer, got -5/);
});

test('bad options are refused with the problem named', () => {
  assert.throws(() => codeTool({ tools: null as never }), /tools must be an AI SDK ToolSet \(an object of tools\), got null/);
  const shared = codeToolFor();
  assert.throws(() => codeTool({ tools, runtime: shared.runtime, timeoutMs: 5 }), /pass either runtime or runtime options, not both \(got runtime and timeoutMs\)/);
  assert.throws(() => codeTool({ tools, timeoutMs: -1 } as never), /timeoutMs/);
});

test.run();
