// The late-import rule (carrier/imports/late.ts, repl-hooks.ts) where a launch cannot show it: a
// per-call carrier is killed as soon as its result is taken, so what its late imports do (stay
// pending until the process exits) is seen here, in this process, with the evaluation's end
// decided by the test. The retained case, through real carriers, is in test/integration/imports.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vm from 'node:vm';
import { failedByEnd, guardImport } from '../../../../carrier/imports/late.ts';
import { installReplImports } from '../../../../carrier/imports/repl-hooks.ts';
import type { ImportSetup } from '../../../../carrier/imports/setup.ts';

const scratch = mkdtempSync(join(tmpdir(), 'ptc-late-imports-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));

/** A setup whose one evaluation is active until `end()`. */
function evaluation(retained: boolean): { setup: ImportSetup; end(): void } {
  let current: object | undefined = {};
  return {
    setup: { handler: () => () => ({ type: 'default' }), evaluation: () => current, busy: () => current !== undefined, retained },
    end() {
      current = undefined;
    },
  };
}

/** How a promise stands once every reaction already due has run. */
async function state(promise: Promise<unknown>): Promise<unknown> {
  let seen: unknown = 'pending';
  promise.then((value) => (seen = ['resolved', value]), (error) => (seen = ['rejected', error]));
  await new Promise((resolve) => setImmediate(resolve));
  return seen;
}

test('an import of an active evaluation settles as it would', async () => {
  const { setup } = evaluation(true);
  assert.equal(await state(guardImport(setup, 'x', () => Promise.resolve('module'))), ['resolved', 'module']);
  const error = new Error('not found');
  assert.equal(await state(guardImport(setup, 'x', () => Promise.reject(error))), ['rejected', error]);
});

test('retained: an import started, or settled, after its evaluation ended rejects, marked as ended', async () => {
  for (const when of ['before the start', 'before it settles']) {
    const { setup, end } = evaluation(true);
    let started = false;
    if (when === 'before the start') end();
    const importing = guardImport(setup, 'node:path', () => {
      started = true;
      return Promise.resolve('module');
    });
    end();
    const [outcome, error] = (await state(importing)) as [string, Error & { code?: string }];
    assert.equal([outcome, error.code, error.message], ['rejected', 'PTC_EVALUATION_ENDED', 'import of "node:path" after the evaluation that started it ended'], when);
    assert.ok(failedByEnd(error));
    assert.is(started, when !== 'before the start', 'a late import is not even started');
  }
});

test('temporary: an import started, or settled, after its evaluation ended stays pending', async () => {
  for (const when of ['before the start', 'before it settles']) {
    const { setup, end } = evaluation(false);
    if (when === 'before the start') end();
    const importing = guardImport(setup, 'node:path', () => Promise.resolve('module'));
    end();
    assert.is(await state(importing), 'pending', when);
  }
});

test('Node\'s REPL: a late import rejects in a retained environment and stays pending in a temporary one', async () => {
  // Node's REPL gives its imports the parent `<cwd>/repl`; a Script of that name imports the same way.
  const replImport = vm.runInThisContext('(specifier) => import(specifier)', {
    filename: join(scratch, 'repl'),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  }) as (specifier: string) => Promise<unknown>;
  for (const retained of [true, false]) {
    const { setup, end } = evaluation(retained);
    const uninstall = installReplImports(setup, () => join(scratch, 'program.ts'), {});
    try {
      assert.is(typeof ((await replImport('node:path')) as { join?: unknown }).join, 'function');
      end();
      const late = replImport('node:path');
      // An import of the same module that nothing holds back settles first.
      const control = await import('node:path');
      assert.is(typeof control.join, 'function');
      const outcome = await state(late);
      if (retained) assert.equal([(outcome as [string, Error])[0], ((outcome as [string, Error & { code?: string }])[1]).code], ['rejected', 'PTC_EVALUATION_ENDED']);
      else assert.is(outcome, 'pending');
    } finally {
      uninstall();
    }
  }
});

test.run();
