// Host bindings in real carriers: globals and namespaces, lossless arguments and results,
// BindingError for host failures, the pending-call and message limits, binding validation, and
// images (image() results, Image.fromFile, no direct construction).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join, resolve as resolvePath } from 'node:path';
import { image, type Bindings } from '../../host/index.ts';
import { runProgram, createTestRuntime } from '../helpers/runtime.ts';
import { failureOf, show, valueOf } from '../helpers/assert.ts';

const IMAGES = resolvePath(new URL('../fixtures/images', import.meta.url).pathname);
const FILE = resolvePath('program.ts');


/** Catches whatever the program's call throws and returns its observable shape. */
const CAUGHT = '(e) => ({ name: e.name, message: e.message, binding: e.binding ?? null, code: e.code ?? null, isBindingError: e instanceof BindingError, isError: e instanceof Error })';

test('bindings are async globals; nested objects become namespaces', async () => {
  const bindings: Bindings = {
    add: async (a: number, b: number) => a + b,
    github: { listIssues: async ({ repo }: { repo: string }) => [{ repo, number: 1 }] },
    math: { stats: { mean: async (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length } },
  };
  const program = 'return [typeof add, typeof github, await add(1, 2), await github.listIssues({ repo: "ptc" }), await math.stats.mean([1, 2, 6])];';
  assert.equal(valueOf(await runProgram(program, { bindings })), ['function', 'object', 3, [{ repo: 'ptc', number: 1 }], 3]);
});

test('namespaces have no prototype: members named __proto__, constructor or while are plain bindings', async () => {
  const bindings: Bindings = { ns: { ['__proto__']: async () => 'proto', constructor: async () => 'ctor', while: async () => 'loop' } };
  const program = 'return [Object.getPrototypeOf(ns) === null, Object.keys(ns), await ns.__proto__(), await ns.constructor(), await ns.while()];';
  assert.equal(valueOf(await runProgram(program, { bindings })), [true, ['__proto__', 'constructor', 'while'], 'proto', 'ctor', 'loop']);
});

test('arguments and results are lossless: bigints beyond 2^64 arrive and return exactly', async () => {
  const received: unknown[] = [];
  const bindings: Bindings = {
    grow: async (value: bigint, rest: unknown) => {
      received.push(value, rest);
      return { big: 2n ** 64n + 1n, echo: rest };
    },
  };
  const program = [
    'const rest = { floats: [0.1, -1.25, 2 ** 60], text: "é \\u2028 😀", flags: [true, false, null] };',
    'const r = await grow(2n ** 70n, rest);',
    'return [typeof r.big, r.big === 2n ** 64n + 1n, JSON.stringify(r.echo) === JSON.stringify(rest)];',
  ].join('\n');
  assert.equal(valueOf(await runProgram(program, { bindings })), ['bigint', true, true]);
  assert.is(received[0], 2n ** 70n);
  assert.equal(received[1], { floats: [0.1, -1.25, 2 ** 60], text: 'é \u2028 😀', flags: [true, false, null] });
});

test('a lossy argument is a TypeError in the program naming the path; the binding is not called', async () => {
  let calls = 0;
  const bindings: Bindings = { save: async () => void calls++ };
  const program = `return await save("ok", { when: new Date(0) }).then(() => "called", ${CAUGHT});`;
  const value = valueOf(await runProgram(program, { bindings })) as Record<string, unknown>;
  assert.is(value.name, 'TypeError');
  assert.ok(String(value.message).includes('arguments[1].when') && String(value.message).includes('Date'), String(value.message));
  assert.is(value.isError, true);
  assert.is(calls, 0);
});

test('a lossy result is a BindingError in the program naming the path', async () => {
  const bindings: Bindings = { github: { issue: async () => ({ title: 'x', opened: new Date(0) }) } };
  const value = valueOf(await runProgram(`return await github.issue().then(() => "returned", ${CAUGHT});`, { bindings })) as Record<string, unknown>;
  assert.is(value.name, 'BindingError');
  assert.is(value.binding, 'github.issue');
  assert.is(value.code, 'PTC_INVALID_RESULT');
  assert.is(value.isBindingError, true);
  assert.ok(String(value.message).includes('result.opened') && String(value.message).includes('Date'), String(value.message));
});

test('a rejecting binding throws BindingError with the message, binding name and string code', async () => {
  const table: Array<[unknown, string, string | null]> = [
    // what the host function throws, the message and code the program sees
    [Object.assign(new Error('rate limited'), { code: 'E_RATE_LIMIT' }), 'rate limited', 'E_RATE_LIMIT'],
    [new TypeError('repo must be owner/name'), 'repo must be owner/name', null],
    ['plain string', 'plain string', null],
    [Object.assign(new Error('numeric code'), { code: 429 }), 'numeric code', null],
    // Values JSON cannot carry still reach the program as a BindingError, never a hang.
    [{ message: 'plain object', code: 'E_PLAIN' }, 'plain object', 'E_PLAIN'],
    [{ reason: 12n, nested: { at: new Date(0) } }, '{ reason: 12n, nested: { at: 1970-01-01T00:00:00.000Z } }', null],
    [Symbol('odd'), 'Symbol(odd)', null],
    [undefined, 'undefined', null],
    [Object.defineProperty(new Error('x'), 'message', { get() { throw new Error('trap'); } }), 'the binding threw a value that cannot be described', null],
    [new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('trap'); }, ownKeys() { throw new Error('trap'); } }), 'the binding threw a value that cannot be described', null],
  ];
  for (const [thrown, message, code] of table) {
    const bindings: Bindings = {
      github: {
        listIssues: async () => {
          throw thrown;
        },
      },
    };
    const value = valueOf(await runProgram(`return await github.listIssues({}).then(() => "returned", ${CAUGHT});`, { bindings }));
    assert.equal(value, { name: 'BindingError', message, binding: 'github.listIssues', code, isBindingError: true, isError: true }, message);
  }
});

test('an uncaught BindingError is an exception failure with name, binding and code', async () => {
  const bindings: Bindings = {
    fetchPage: async () => {
      throw Object.assign(new Error('upstream returned 503'), { code: 'E_UPSTREAM' });
    },
  };
  const program = 'const url = "https://example.test";\nconst page = await fetchPage(url);\nreturn page;';
  const column = program.split('\n')[1]!.indexOf('await') + 1;
  assert.equal(failureOf(await runProgram(program, { bindings })), {
    kind: 'exception',
    name: 'BindingError',
    message: 'upstream returned 503',
    stack: `BindingError: upstream returned 503\n    at async ${FILE}:2:${column}`,
    location: { line: 2, column },
    binding: 'fetchPage',
    code: 'E_UPSTREAM',
  });
});

test('maxPendingCalls: calls past the limit wait for a slot, in order, and the host never sees more than the limit', async () => {
  const started: number[] = [];
  let inFlight = 0;
  let most = 0;
  // Calls are held until three are in flight (or all 200 have come), so the limit is reached
  // whatever the transport's timing, and a fourth call in flight would fail the run.
  const held: Array<() => void> = [];
  const bindings: Bindings = {
    slow: async (n: number) => {
      started.push(n);
      most = Math.max(most, ++inFlight);
      await new Promise<void>((resolve) => {
        held.push(resolve);
        if (inFlight === 3 || started.length === 200) for (const release of held.splice(0)) release();
      });
      inFlight--;
      return n * 10;
    },
  };
  const program = 'const all = await Promise.all(Array.from({ length: 200 }, (_, i) => slow(i)));\nreturn [all.length, all[0], all[199]];';
  const value = valueOf(await runProgram(program, { bindings }, { maxPendingCalls: 3 }));
  assert.equal(value, [200, 0, 1990]);
  assert.is(most, 3);
  assert.equal(started, Array.from({ length: 200 }, (_, i) => i));
});

test('maxMessageBytes: calls whose arguments together pass the limit wait for room, and each arrives', async () => {
  const received: number[] = [];
  const bindings: Bindings = {
    store: async (text: string) => {
      received.push(text.length);
      await new Promise((resolve) => setImmediate(resolve));
      return text.length;
    },
  };
  const program = 'return await Promise.all([store("x".repeat(3000)), store("y".repeat(3000)), store("z".repeat(3000))]);';
  assert.equal(valueOf(await runProgram(program, { bindings }, { maxMessageBytes: 4096 })), [3000, 3000, 3000]);
  assert.equal(received, [3000, 3000, 3000]);
});

test('maxMessageBytes: a call whose argument text exceeds the limit rejects with PTC_MESSAGE_LIMIT', async () => {
  const received: number[] = [];
  const bindings: Bindings = {
    store: async (text: string) => {
      received.push(text.length);
      return text.length;
    },
  };
  const program = `const big = await store("x".repeat(5000)).then(() => "stored", ${CAUGHT});\nreturn [big, await store("x".repeat(100))];`;
  const value = valueOf(await runProgram(program, { bindings }, { maxMessageBytes: 4096 })) as [Record<string, unknown>, number];
  assert.is(value[0].name, 'BindingError');
  assert.is(value[0].binding, 'store');
  assert.is(value[0].code, 'PTC_MESSAGE_LIMIT');
  assert.ok(String(value[0].message).includes('4096'), String(value[0].message));
  assert.is(value[1], 100);
  assert.equal(received, [100]);
});

test('invalid bindings throw at resolve(), naming the binding', async () => {
  const fn = async () => null;
  const table: Array<[unknown, string[]]> = [
    [{ limit: 5 }, ['"limit"', '5']],
    [{ github: { token: 'secret' } }, ['"github.token"']],
    [{ github: [fn] }, ['"github"']],
    [{ 'list-issues': fn }, ['"list-issues"', 'identifier']],
    [{ github: { '2fa': fn } }, ['"github.2fa"', 'identifier']],
    [{ inspect: fn }, ['"inspect"', 'reserved']],
    [{ Image: fn }, ['"Image"', 'reserved']],
    [{ BindingError: fn }, ['"BindingError"', 'reserved']],
    [{ console: { log: fn } }, ['"console"', 'reserved']],
    [{ while: fn }, ['"while"', 'reserved word', 'ns.while']],
    [{ await: fn }, ['"await"', 'reserved word']],
    [{ class: { list: fn } }, ['"class"', 'reserved word']],
    [{ ['__proto__']: fn }, ['"__proto__"', 'prototype']],
    ['not an object', ['bindings']],
  ];
  const runtime = createTestRuntime();
  for (const [bindings, parts] of table) {
    let thrown: unknown;
    try {
      runtime.resolve({ program: '', bindings: bindings as Bindings });
    } catch (error) {
      thrown = error;
    }
    assert.instance(thrown, TypeError, show(bindings));
    for (const part of parts) assert.ok((thrown as Error).message.includes(part), `"${(thrown as Error).message}" should name ${part}`);
  }
  await runtime.dispose();
});

test('image() results arrive as Images, directly and nested, and inspect() shows them', async () => {
  const png = join(IMAGES, 'rgb-300x7.png');
  const gif = join(IMAGES, 'gif89a-303x11.gif');
  const bindings: Bindings = {
    screenshot: async () => image(png),
    report: async () => ({ title: 'run', shots: [{ at: 1, shot: image(gif) }], cover: image(png) }),
  };
  const program = [
    'const shot = await screenshot();',
    'const doc = await report();',
    'const describe = (i) => [i instanceof Image, i.attachmentId, i.path, i.width, i.height];',
    'inspect(shot);',
    'return [describe(shot), describe(doc.shots[0].shot), describe(doc.cover), doc.title, doc.shots[0].at];',
  ].join('\n');
  const result = await runProgram(program, { bindings });
  const [shot, nested, cover, title, at] = valueOf(result) as Array<[boolean, string, string, number, number]>;
  assert.equal(shot.slice(0, 1).concat(shot.slice(2)), [true, png, 300, 7]);
  assert.equal(nested.slice(0, 1).concat(nested.slice(2)), [true, gif, 303, 11]);
  assert.equal(cover.slice(0, 1).concat(cover.slice(2)), [true, png, 300, 7]);
  assert.equal([title, at], ['run', 1]);
  const ids = [shot[1], nested[1], cover[1]];
  for (const id of ids) assert.ok(typeof id === 'string' && id !== '', `attachment id ${id}`);
  assert.is(new Set(ids).size, 3, 'each image gets its own attachment id');
  assert.equal(result.output, [{ type: 'image', attachmentId: shot[1], path: png, width: 300, height: 7 }]);
});

test('Image.fromFile reads PNG, JPEG, GIF and WebP sizes, relative to the cwd', async () => {
  const table: Array<[string, number, number]> = [
    ['rgb-300x7.png', 300, 7],
    ['baseline-301x9.jpg', 301, 9],
    ['progressive-302x10.jpg', 302, 10],
    ['gif89a-303x11.gif', 303, 11],
    ['gif87a-304x12.gif', 304, 12],
    ['lossy-vp8-305x13.webp', 305, 13],
    ['lossless-vp8l-306x14.webp', 306, 14],
    ['extended-vp8x-307x15.webp', 307, 15],
  ];
  const program = [
    `const names = ${JSON.stringify(table.map(([name]) => name))};`,
    'const images = [];',
    'for (const name of names) images.push(await Image.fromFile(name));',
    'return images.map((i) => [i instanceof Image, typeof i.attachmentId, i.path, i.width, i.height]);',
  ].join('\n');
  const value = valueOf(await runProgram(program, { cwd: IMAGES }));
  assert.equal(value, table.map(([name, width, height]) => [true, 'string', join(IMAGES, name), width, height]));
});

test('Image.fromFile of a non-image or missing file rejects with an Error naming the path', async () => {
  for (const name of ['generate.sh', 'missing.png']) {
    const path = join(IMAGES, name);
    const caught = valueOf(await runProgram(`return await Image.fromFile(${JSON.stringify(name)}).then(() => "loaded", ${CAUGHT});`, { cwd: IMAGES })) as Record<string, unknown>;
    assert.is(caught.isError, true, name);
    assert.is(caught.isBindingError, false, name);
    assert.ok(String(caught.message).includes(`"${path}"`), `"${caught.message}" should name ${path}`);

    const failure = failureOf(await runProgram(`await Image.fromFile(${JSON.stringify(name)});`, { cwd: IMAGES }));
    assert.is(failure.kind, 'exception');
    assert.is(failure.name, caught.name);
    assert.is(failure.message, caught.message);
    assert.equal(failure.location, { line: 1, column: 1 });
  }
});

test('new Image() throws a TypeError', async () => {
  const caught = valueOf(await runProgram(`try { new Image(); return "constructed"; } catch (e) { return (${CAUGHT})(e); }`));
  assert.equal(caught, {
    name: 'TypeError',
    message: 'Image cannot be constructed directly; use await Image.fromFile(path)',
    binding: null,
    code: null,
    isBindingError: false,
    isError: true,
  });
  const failure = failureOf(await runProgram('const size = 1;\nconst forged = new Image("id", { attachmentId: "x", path: "/etc/passwd", width: size, height: size });'));
  assert.is(failure.kind, 'exception');
  assert.is(failure.name, 'TypeError');
  assert.equal(failure.location, { line: 2, column: 16 });
});

test.run();
