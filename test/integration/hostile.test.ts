// Hostile programs through the real carriers and the real sandboxes (bubblewrap and Node's
// permission model). Each row is one attack with the failure it must produce; after every row the
// harness proves the host is healthy: a follow-up run on the same runtime succeeds, no process is
// left in the workspace, no temp entry is left, and the host's RSS stays bounded. Killing the host
// and the FIFO read through dist/ptc run are in test/e2e/hostile-cli.test.ts.
// launch: local only. The attacks aim at the host through the local sandbox backends; a remote
// carrier's host is another machine (the far side's kill and cleanup are in remote.test.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BACKENDS, processesIn, removeTempRoot, tempLeftovers, workspace, type Backend } from '../helpers/hostile.ts';
import { failureOf } from '../helpers/assert.ts';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { image, type Bindings, type RunResult, type RuntimeConfig } from '../../host/index.ts';
import { createTestRuntime, childrenOf, repoRoot } from '../helpers/runtime.ts';

const HOST = process.pid;
const HOST_GROUP = Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')[2]);
const PNG = readFileSync(join(repoRoot, 'test/fixtures/images/rgb-300x7.png'));
/** Generous: a bound on growth, not a measurement. */
const RSS_GROWTH_LIMIT = 256 * 1024 * 1024;

interface Case {
  name: string;
  program: string | ((ws: string) => string);
  /** Which backends the row applies to. @default both */
  backends?: readonly Backend[];
  config?: RuntimeConfig;
  bindings?: (ws: string) => Bindings;
  timeoutMs?: number;
  setup?(ws: string): void;
  expect(result: RunResult, backend: Backend, ws: string): void;
}

/** An uncaught error the guard or the sandbox threw: exception, the code, a message naming it. */
function refused(code: string, message: string | RegExp) {
  return (result: RunResult): void => {
    const seen = failureOf(result);
    assert.is(seen.kind, 'exception', seen.message);
    assert.is(seen.code, code, seen.message);
    if (typeof message === 'string') assert.ok(seen.message.includes(message), seen.message);
    else assert.match(seen.message, message);
    assert.is(result.sandbox.denied, code === 'EPERM' || code === 'ERR_ACCESS_DENIED' || result.sandbox.denied);
  };
}

function workerExit(exitCode: number | null, signal: string | null, message: RegExp) {
  return (result: RunResult): void => {
    const seen = failureOf(result);
    assert.is(seen.kind, 'worker-exit', seen.message);
    assert.equal([seen.exitCode, seen.signal], [exitCode, signal], seen.message);
    assert.match(seen.message, message);
  };
}

const WAIT_FOREVER = 'await new Promise(() => {});';
const SMALL_HEAP: RuntimeConfig = { maxOldGenerationSizeMb: 64 };

const CASES: Case[] = [
  {
    name: 'process.kill(host, SIGKILL) is refused',
    program: `process.kill(${HOST}, 'SIGKILL'); return 'sent'`,
    expect: refused('EPERM', `kill EPERM: pid ${HOST} is not a process this program started`),
  },
  {
    name: 'process.kill(process.ppid, SIGKILL) is refused',
    program: `process.kill(process.ppid, 'SIGKILL'); return 'sent'`,
    expect: refused('EPERM', /^kill EPERM: pid \d+ is not a process this program started/),
  },
  {
    name: 'the signal guard cannot be talked round by replaced intrinsics or a forged /proc',
    program: [
      "const fs = await import('node:fs'); const { syncBuiltinESMExports } = await import('node:module');",
      "const fake = () => '1 (node) S ' + process.pid + ' 0 0';",
      "fs.default.readFileSync = fake; syncBuiltinESMExports();",
      'Math.abs = () => process.pid; Number.isInteger = () => false;',
      "String.prototype.split = () => ['S', String(process.pid)]; String.prototype.lastIndexOf = () => 0;",
      `process.kill(${HOST}, 'SIGKILL'); return 'sent'`,
    ].join('\n'),
    expect: refused('EPERM', `kill EPERM: pid ${HOST}`),
  },
  {
    name: 'a pid that would change between check and use (valueOf) or truncate in the binding is refused',
    program: `const tries = [() => process.kill({ valueOf: () => ${HOST} }, 'SIGKILL'), () => process._kill(${HOST} + 0.5, 9), () => process._kill(2 ** 32 + ${HOST}, 9)];
const seen = [];
for (const attempt of tries) { try { attempt(); seen.push('sent'); } catch (error) { seen.push(error.code); } }
return seen;`,
    expect: (result) => {
      assert.is(result.status, 'ok', JSON.stringify(result));
      assert.equal(result.status === 'ok' && result.value, ['ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE']);
    },
  },
  {
    name: 'process._kill, the binding behind process.kill, is refused',
    program: `process._kill(${HOST}, 9); return 'sent'`,
    expect: refused('EPERM', `kill EPERM: pid ${HOST}`),
  },
  {
    name: "process._debugProcess(host), which would open the host's inspector with SIGUSR1, is refused",
    program: `process._debugProcess(${HOST}); return 'sent'`,
    expect: refused('EPERM', `kill EPERM: pid ${HOST}`),
  },
  {
    name: "a signal to the host's process group is refused",
    program: `process.kill(-${HOST_GROUP}, 'SIGKILL'); return 'sent'`,
    expect: refused('EPERM', `kill EPERM: pid -${HOST_GROUP}`),
  },
  {
    name: 'renicing the host is refused',
    program: `(await import('node:os')).setPriority(${HOST}, 19); return 'reniced'`,
    expect: refused('EPERM', `uv_os_setpriority EPERM: pid ${HOST}`),
  },
  {
    name: "the host's environment is out of reach through /proc",
    program: `return (await import('node:fs')).readFileSync('/proc/${HOST}/environ', 'utf8')`,
    // bwrap: the host is not in the pid namespace; node-permission: /proc is not granted.
    expect: (result, backend) => refused(backend === 'bwrap' ? 'ENOENT' : 'ERR_ACCESS_DENIED', backend === 'bwrap' ? `ENOENT: no such file or directory, open '/proc/${HOST}/environ'` : `ptc sandbox refused reading "/proc/${HOST}/environ": /proc and /dev are hidden from confined programs`)(result),
  },
  {
    name: 'Image.fromFile on a FIFO fails at once instead of waiting for a writer',
    setup: (ws) => execFileSync('mkfifo', [join(ws, 'pipe.png')]),
    program: `await Image.fromFile('pipe.png')`,
    expect: (result, _backend, ws) => {
      const seen = failureOf(result);
      assert.equal([seen.kind, seen.name, seen.message], ['exception', 'TypeError', `Image.fromFile: "${ws}/pipe.png" is not a regular file (it is a FIFO)`]);
    },
  },
  {
    name: 'Image.fromFile on /dev/kmsg fails at once instead of blocking on a read',
    program: `await Image.fromFile('/dev/kmsg')`,
    expect: (result, backend) => {
      const seen = failureOf(result);
      // bwrap's fresh /dev has no kmsg; node-permission does not grant the host's /dev.
      const message = backend === 'bwrap'
        ? /^Image\.fromFile: "\/dev\/kmsg" cannot be read: ENOENT/
        : /^Image\.fromFile: "\/dev\/kmsg" cannot be read: Access to this API has been restricted/;
      assert.is(seen.kind, 'exception');
      assert.match(seen.message, message);
    },
  },
  {
    name: 'Image.fromFile on a readable character device (/dev/zero) is refused, not read forever',
    program: `await Image.fromFile('/dev/zero')`,
    expect: (result) => {
      const seen = failureOf(result);
      assert.equal([seen.kind, seen.name, seen.message], ['exception', 'TypeError', 'Image.fromFile: "/dev/zero" is not a regular file (it is a character device)']);
    },
  },
  {
    // bwrap's /dev has a tty node, and without a controlling terminal opening it fails (ENXIO).
    name: 'Image.fromFile on /dev/tty is refused as a device without being opened',
    backends: ['bwrap'],
    program: `await Image.fromFile('/dev/tty')`,
    expect: (result) => {
      const seen = failureOf(result);
      assert.equal([seen.kind, seen.name, seen.message], ['exception', 'TypeError', 'Image.fromFile: "/dev/tty" is not a regular file (it is a character device)']);
    },
  },
  {
    name: "the host's terminals are out of reach",
    backends: ['node-permission'],
    program: `return (await import('node:fs')).readdirSync('/dev/pts')`,
    expect: refused('ERR_ACCESS_DENIED', 'ptc sandbox refused reading "/dev/pts": /proc and /dev are hidden from confined programs'),
  },
  {
    name: 'a binding returning image(FIFO) rejects in the program instead of blocking the host',
    setup: (ws) => execFileSync('mkfifo', [join(ws, 'pipe.png')]),
    bindings: () => ({ screenshot: async () => image('pipe.png') }),
    program: `try { await screenshot(); return 'loaded' } catch (error) { return [error.name, error.binding, error.message] }`,
    expect: (result, _backend, ws) => {
      assert.is(result.status, 'ok', JSON.stringify(result));
      assert.equal(result.status === 'ok' && result.value, ['BindingError', 'screenshot', `screenshot: image(): "${ws}/pipe.png" is not a regular file (it is a FIFO)`]);
    },
  },
  {
    name: "Image.fromFile cannot learn the size of a host /tmp file the sandbox hides",
    backends: ['bwrap'],
    setup: () => writeFileSync(HIDDEN_PNG, PNG),
    program: `const image = await Image.fromFile(${JSON.stringify(`/tmp/ptc-hostile-${process.pid}.png`)}); return [image.width, image.height]`,
    expect: (result) => {
      const seen = failureOf(result);
      assert.is(seen.kind, 'exception');
      assert.match(seen.message, /^Image\.fromFile: "\/tmp\/ptc-hostile-\d+\.png" cannot be read: ENOENT/);
    },
  },
  {
    name: 'a fork bomb of promise jobs ends at the heap limit or the deadline',
    config: SMALL_HEAP,
    timeoutMs: 5_000,
    program: `const bomb = () => { Promise.resolve().then(bomb); Promise.resolve().then(bomb); }; bomb(); ${WAIT_FOREVER}`,
    expect: (result) => {
      const seen = failureOf(result);
      assert.ok(seen.kind === 'worker-exit' || seen.kind === 'timeout', `${seen.kind}: ${seen.message}`);
      if (seen.kind === 'worker-exit') assert.match(seen.message, /heap limit/);
    },
  },
  {
    name: 'a fork bomb of timers ends at the heap limit or the deadline',
    config: SMALL_HEAP,
    timeoutMs: 5_000,
    program: `const bomb = () => { setTimeout(bomb, 0); setTimeout(bomb, 0); setImmediate(bomb); }; bomb(); ${WAIT_FOREVER}`,
    expect: (result) => {
      const seen = failureOf(result);
      assert.ok(seen.kind === 'worker-exit' || seen.kind === 'timeout', `${seen.kind}: ${seen.message}`);
      if (seen.kind === 'worker-exit') assert.match(seen.message, /heap limit/);
    },
  },
  {
    name: 'a huge synchronous allocation is worker-exit at the heap limit',
    config: SMALL_HEAP,
    program: 'const hold = []; for (;;) hold.push(new Array(1 << 20).fill(7));',
    expect: (result) => {
      const seen = failureOf(result);
      assert.is(seen.kind, 'worker-exit');
      assert.match(seen.message, /^the carrier (was killed by SIG[A-Z]+|exited with code \d+) after reaching its heap limit \(maxOldGenerationSizeMb\) before the program finished$/);
    },
  },
  {
    name: 'process.exit in a callback is worker-exit with its code',
    program: `setTimeout(() => process.exit(3), 0); ${WAIT_FOREVER}`,
    expect: workerExit(3, null, /^the carrier exited with code 3 before the program finished$/),
  },
  {
    name: 'closing fds 0-2 leaves output and the completion intact',
    program: `const fs = await import('node:fs'); for (const fd of [0, 1, 2]) fs.closeSync(fd); inspect('after'); return 'closed'`,
    expect: (result) => {
      assert.is(result.status, 'ok', JSON.stringify(result));
      assert.equal([result.status === 'ok' && result.value, result.output], ['closed', [{ type: 'text', text: 'after\n', stream: 'stdout' }]]);
    },
  },
  {
    name: 'writing to stdin goes nowhere',
    program: `return (await import('node:fs')).writeSync(0, 'to stdin')`,
    expect: (result) => {
      // stdin is /dev/null: the write is accepted and discarded, or refused; the host sees nothing either way.
      if (result.status === 'ok') assert.is(result.value, 8);
      else assert.is(failureOf(result).kind, 'exception');
    },
  },
  {
    name: 'an infinite synchronous loop is a timeout',
    timeoutMs: 1_500,
    program: 'for (;;) {}',
    expect: (result) => {
      const seen = failureOf(result);
      assert.is(seen.kind, 'timeout');
      assert.match(seen.message, /^execution timed out during execution/);
    },
  },
  {
    name: 'an unhandled rejection fails the run as its exception',
    program: "Promise.reject(new RangeError('nobody catches this')); await new Promise((resolve) => setTimeout(resolve, 200)); return 'unreached'",
    expect: (result) => {
      const seen = failureOf(result);
      assert.equal([seen.kind, seen.name, seen.message], ['exception', 'RangeError', 'nobody catches this']);
    },
  },
  {
    name: 'SIGKILL to its own process group is worker-exit naming the signal',
    program: `process.kill(0, 'SIGKILL'); ${WAIT_FOREVER}`,
    expect: workerExit(null, 'SIGKILL', /^the carrier was killed by SIGKILL before the program finished$/),
  },
  {
    name: 'SIGTERM to its own process is worker-exit naming the signal',
    program: `process.kill(process.pid, 'SIGTERM'); ${WAIT_FOREVER}`,
    expect: workerExit(null, 'SIGTERM', /^the carrier was killed by SIGTERM before the program finished$/),
  },
  {
    name: 'process.abort() is worker-exit naming SIGABRT',
    program: 'process.abort();',
    expect: workerExit(null, 'SIGABRT', /^the carrier was killed by SIGABRT before the program finished$/),
  },
  {
    name: 'SIGSEGV is worker-exit naming the signal',
    program: `process.kill(process.pid, 'SIGSEGV'); ${WAIT_FOREVER}`,
    expect: workerExit(null, 'SIGSEGV', /^the carrier was killed by SIGSEGV before the program finished$/),
  },
];

const HIDDEN_PNG = `/tmp/ptc-hostile-${process.pid}.png`;
const baselineRss = process.memoryUsage().rss;

for (const row of CASES) {
  for (const backend of row.backends ?? BACKENDS) {
    test(`${backend}: ${row.name}`, async () => {
      const ws = workspace();
      row.setup?.(ws);
      const runtime = createTestRuntime({ prestartCarrier: false, timeoutMs: 20_000, sandbox: { backend, require: 'partial' }, policy: { mode: 'workspace-write' }, ...row.config });
      try {
        const program = typeof row.program === 'string' ? row.program : row.program(ws);
        const result = await runtime.run(runtime.resolve({
          program,
          cwd: ws,
          ...(row.timeoutMs !== undefined ? { timeoutMs: row.timeoutMs } : {}),
          ...(row.bindings !== undefined ? { bindings: row.bindings(ws) } : {}),
        }));
        assert.is(result.sandbox.backend, backend);
        row.expect(result, backend, ws);
        const after = await runtime.run(runtime.resolve({ program: "inspect('still here'); return 'healthy'", cwd: ws }));
        assert.equal([after.status, after.status === 'ok' && after.value, after.output], ['ok', 'healthy', [{ type: 'text', text: 'still here\n', stream: 'stdout' }]], JSON.stringify(after));
      } finally {
        await runtime.dispose();
        rmSync(HIDDEN_PNG, { force: true });
      }
      assert.equal(processesIn(ws), [], 'processes left in the workspace');
      assert.equal(childrenOf(process.pid).filter((child) => child.state !== 'Z'), [], 'children of the host left running');
      rmSync(ws, { recursive: true, force: true });
      assert.equal(tempLeftovers(), [], 'temp entries left behind');
      const growth = process.memoryUsage().rss - baselineRss;
      assert.ok(growth < RSS_GROWTH_LIMIT, `host RSS grew by ${(growth / 2 ** 20).toFixed(0)} MiB`);
    });
  }
}

test.after(() => {
  removeTempRoot();
  rmSync(HIDDEN_PNG, { force: true });
});

test.run();
