// carrier/hardening/builtin-guard.ts: a refused built-in's exports throw on every way in (import, require,
// getBuiltinModule), a refused export throws while the module's others work, and Node's own
// syncBuiltinESMExports keeps working after an import of a refused built-in. Each suite runs in its own process (test/run.ts), so
// refusing querystring and url.domainToASCII here touches nothing else.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { refuseBuiltin, refuseExport } from '../../../../carrier/hardening/builtin-guard.ts';

const require = createRequire(import.meta.url);
const refused: string[] = [];
const refusal = (what: string): Error => {
  refused.push(what);
  return Object.assign(new Error(`${what} is refused here`), { code: 'ERR_ACCESS_DENIED' });
};

refuseBuiltin('node:querystring', refusal);
refuseExport('node:url', 'domainToASCII', refusal);

test('every export of a refused built-in throws when called or constructed, through import, require and getBuiltinModule', async () => {
  const namespace = await import('node:querystring');
  const viaRequire = require('node:querystring') as Record<string, (...args: unknown[]) => unknown>;
  const viaGetter = process.getBuiltinModule('node:querystring') as typeof viaRequire;
  assert.is(viaRequire, viaGetter);
  const before = refused.length;
  for (const call of [() => namespace.parse('a=1'), () => viaRequire.stringify!({ a: 1 }), () => viaGetter.escape!('a'), () => new (viaRequire.parse as unknown as new () => object)()]) {
    let thrown: (Error & { code?: string }) | undefined;
    try {
      call();
    } catch (error) {
      thrown = error as Error & { code?: string };
    }
    assert.equal({ message: thrown?.message, code: thrown?.code }, { message: 'node:querystring is refused here', code: 'ERR_ACCESS_DENIED' });
  }
  assert.is(refused.length, before + 4);
});

test('a refused built-in takes no replacement and no new export', () => {
  const exports = require('node:querystring') as Record<string, unknown>;
  assert.throws(() => Object.defineProperty(exports, 'parse', { value: () => ({}) }), TypeError);
  assert.throws(() => Object.defineProperty(exports, 'other', { value: 1 }), TypeError);
  assert.throws(() => Object.defineProperty(exports.parse as object, 'call', { value: () => ({}) }), TypeError);
});

test('a refused export throws each time it is called, through import too; the rest of the module works', async () => {
  const url = await import('node:url');
  assert.throws(() => url.domainToASCII('example.com'), /node:url.domainToASCII\(\) is refused here/);
  assert.throws(() => (require('node:url') as typeof url).domainToASCII('example.com'), /refused/);
  assert.is(url.domainToUnicode('example.com'), 'example.com');
  const before = refused.length;
  assert.throws(() => url.domainToASCII('a'));
  assert.is(refused.length, before + 1);
});

test("Node's syncBuiltinESMExports still runs after the refusals", () => {
  syncBuiltinESMExports();
});

test.run();
