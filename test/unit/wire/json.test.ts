// The lossless writer's two passes: plain data is proven plain member by member and then written
// by the captured JSON.stringify; anything JSON.stringify would write differently, or could run
// program code for (a toJSON or a Proxy up a prototype chain), is written by the encoder's own
// pass. Either way no getter, toJSON or Proxy trap runs, and the first lossy path is named.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runInContext, createContext } from 'node:vm';
import { types } from 'node:util';
import { encodeJson, trustRealm, LossyValueError } from '../../../wire/json.ts';

const carrierOptions = { isProxy: types.isProxy, skipUndefinedMembers: true };

/** The message encodeJson throws for `value`, failing the test when it throws none or another error. */
function refusal(value: unknown, options: Parameters<typeof encodeJson>[2] = carrierOptions): string {
  try {
    encodeJson(value, 'value', options);
  } catch (error) {
    assert.ok(error instanceof LossyValueError, `not a LossyValueError: ${String(error)}`);
    return (error as Error).message;
  }
  throw new assert.Assertion({ message: 'encodeJson accepted the value', operator: 'throws', expects: 'a LossyValueError', actual: value });
}

test('plain data is written exactly as JSON.stringify writes it', () => {
  const value = { a: [1, 0.5, -3e-7, 1e21, 'é"\n\u2028\ud800', true, false, null], '10': { '': [] }, '2': {}, b: Object.assign(Object.create(null), { c: 'd' }), skipped: undefined };
  assert.is(encodeJson(value, 'value', carrierOptions), JSON.stringify(value));
});

test('what JSON.stringify would write differently is written by the encoder: -0, big integers, an integer past 2^53, a replaced object', () => {
  assert.is(encodeJson({ z: -0, n: [1, 10n ** 20n], big: 2 ** 60 }, 'value'), '{"z":-0,"n":[1,100000000000000000000],"big":1.152921504606847e+18}');
  assert.is(encodeJson([-0], 'value', { dropZeroSign: true }), '[0]');
  const replaced = encodeJson({ list: [1, new Error('boom')] }, 'value', { replaceObject: (object, path) => (object instanceof Error ? `{"error":${JSON.stringify(path)}}` : undefined) });
  assert.is(replaced, '{"list":[1,{"error":"value.list[1]"}]}');
});

test('a getter on a member or an element never runs; its path is named', () => {
  let runs = 0;
  const object = { a: { get now() { runs++; return 1; } } };
  assert.is(refusal(object), 'value.a.now is an accessor property (a getter or setter), which is not plain data');
  const array = [1, 2];
  Object.defineProperty(array, 1, { get: () => runs++, enumerable: true });
  assert.is(refusal({ list: array }), 'value.list[1] is an accessor property (a getter or setter), which is not plain data');
  assert.is(runs, 0);
});

test('a Proxy is refused without any of its traps running, at any position', () => {
  let traps = 0;
  const handler = new Proxy({}, { get: () => { traps++; return undefined; } });
  assert.is(refusal({ rows: [{ ok: 1 }, new Proxy({}, handler)] }), 'value.rows[1] is a Proxy, which is not plain data');
  assert.is(refusal(new Proxy([], handler)), 'value is a Proxy, which is not plain data');
  assert.is(traps, 0);
});

test('a toJSON or a Proxy up a trusted realm\'s prototype chains never runs: the encoder writes the value itself', () => {
  const context = createContext({});
  const realm = runInContext('globalThis', context) as object;
  trustRealm(realm);
  const value = runInContext(`
    globalThis.ran = [];
    Object.defineProperty(Object.prototype, 'toJSON', { get() { ran.push('Object.prototype.toJSON'); return () => 'replaced'; }, configurable: true });
    ({ rows: [{ id: 1, tags: ['a'] }, { id: 2, tags: [] }], total: 2 })`, context) as unknown;
  assert.is(encodeJson(value, 'value', carrierOptions), '{"rows":[{"id":1,"tags":["a"]},{"id":2,"tags":[]}],"total":2}');
  const spied = runInContext(`
    delete Object.prototype.toJSON;
    Object.setPrototypeOf(Array.prototype, new Proxy(Object.prototype, {
      get(target, key) { ran.push('get ' + String(key)); return target[key]; },
      getOwnPropertyDescriptor(target, key) { ran.push('descriptor ' + String(key)); return Reflect.getOwnPropertyDescriptor(target, key); },
      has(target, key) { ran.push('has ' + String(key)); return key in target; },
    }));
    [[1, 2], { a: [3] }]`, context) as unknown;
  assert.is(encodeJson(spied, 'value', carrierOptions), '[[1,2],{"a":[3]}]');
  assert.is(runInContext('ran.join()', context), '', 'no getter, toJSON or trap ran');
});

test('a value nested 200,000 deep is written, and one just past JSON.stringify\'s pass too', () => {
  for (const levels of [200_000, 513, 512, 511]) {
    let value: unknown = 7;
    for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value };
    const text = encodeJson(value, 'value', carrierOptions);
    // Arrays at the even levels ("[" and "]"), objects at the odd ones ('{"k":' and "}").
    assert.is(text.length, 2 * Math.ceil(levels / 2) + 6 * Math.floor(levels / 2) + 1, `${levels} levels`);
    assert.ok(text.startsWith(levels % 2 === 0 ? '{"k":[{"k":' : '[{"k":[{'), `${levels} levels`);
    assert.ok(text.includes('{"k":[7]}]}'), `${levels} levels`);
    if (levels < 10_000) assert.is(text, JSON.stringify(value), `${levels} levels`);
  }
});

test('the first lossy value in document order is the one named', () => {
  assert.is(refusal({ a: undefined, [Symbol('tag')]: 1 }, { isProxy: types.isProxy }), 'value.a is undefined, which JSON drops');
  assert.is(refusal({ a: { b: 1, [Symbol('tag')]: 1 }, c: undefined }, { isProxy: types.isProxy }), 'value.a has a symbol key tag, which JSON drops');
  assert.is(refusal({ a: [1, , 3] }), 'value.a[1] is a hole in a sparse array');
  assert.is(refusal({ 'a b': Object.defineProperty({}, 'x', { value: 1 }) }), 'value["a b"].x is a non-enumerable property, which JSON drops');
  const cycle: Record<string, unknown> = { list: [] };
  (cycle.list as unknown[]).push(cycle);
  assert.is(refusal(cycle), 'value.list[0] is a circular reference');
  let deep: Record<string, unknown> = { leaf: 1 };
  const top = deep;
  for (let i = 0; i < 1000; i++) deep = (deep.next = { at: i }) as Record<string, unknown>;
  deep.back = top;
  assert.is(refusal(top), `value${'.next'.repeat(1000)}.back is a circular reference`);
  assert.is(refusal({ n: [Number.NaN] }), 'value.n[0] is NaN, which JSON cannot represent');
});

test('a JSON.rawJSON object is refused: JSON.stringify would write its text in its place', () => {
  const raw = (JSON as unknown as { rawJSON(text: string): object }).rawJSON('1e400');
  assert.is(refusal({ n: raw }), 'value.n is a JSON.rawJSON object, whose text JSON.stringify would write in its place');
});

test.run();
