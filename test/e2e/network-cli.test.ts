// The network allowlist through the built binary and from source: the issue's two commands
// exactly, the flags' errors, and a local server reached through --allow-host. Real bubblewrap.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot, reportLimits } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const fixtures = join(repoRoot, 'test/fixtures/network');
const ISSUE_FLAGS = ['--allow-host', 'api.example.com', '--allow-host', '*.cdn.example.com:443'];

type Run = (args: string[], input?: string) => { code: number | null; stdout: string; stderr: string };

const binary: Run = (args, input = '') => {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const result = spawnSync(BIN, args, { cwd: fixtures, input, encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};
const source: Run = (args, input = '') => {
  const result = spawnSync(process.execPath, [join(repoRoot, 'host/cli/bin.ts'), ...args], { cwd: fixtures, input, encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};

function both(name: string, body: (run: Run) => void | Promise<void>): void {
  test(`${name} (dist/ptc)`, () => body(binary));
  test(`${name} (source)`, () => body(source));
}

both('ptc run fetch-prices.ts --allow-host api.example.com --allow-host \'*.cdn.example.com:443\'', (run) => {
  const { code, stdout, stderr } = run(['run', 'fetch-prices.ts', ...ISSUE_FLAGS]);
  assert.is(stderr, '');
  assert.is(code, 0);
  const lines = stdout.trimEnd().split('\n');
  // The allowed destinations pass the policy: with no route to the internet they fail as the
  // proxy found them (no such name here), never as a policy denial.
  for (const line of lines.slice(0, 2)) assert.not.match(line, /blocked by ptc network policy/, line);
  assert.equal(lines.slice(2), [
    'http://img.cdn.example.com/logo.png -> blocked by ptc network policy: img.cdn.example.com:80 is not allowed (default: not in allowlist)',
    'http://cdn.example.com/ -> blocked by ptc network policy: cdn.example.com:80 is not allowed (default: not in allowlist)',
  ]);
});

both('ptc run --json - <<< fetch of the metadata address is an exception, reported and denied', (run) => {
  const { code, stdout } = run(['run', '--json', ...ISSUE_FLAGS, '-'], 'return (await fetch("http://169.254.169.254/")).status\n');
  assert.is(code, 1);
  const result = decodeJson(stdout) as any;
  assert.is(result.status, 'failed');
  assert.is(result.failure.kind, 'exception');
  assert.is(result.failure.message, 'blocked by ptc network policy: 169.254.169.254:80 is not allowed (default: link-local and metadata addresses are denied unless named)');
  assert.equal(result.sandbox, {
    mode: 'workspace-write',
    backend: 'bwrap',
    enforcement: 'full',
    network: { mode: 'allowlist', allowed: [], denied: [{ host: '169.254.169.254', port: 80, count: 1 }] },
    denied: true,
    memory: 'none', disk: 'watchdog', ...reportLimits(),
  });
});

both('--allow-host reaches a loopback server only when it names it; --deny-host takes a port back', async (run) => {
  const server = createServer((req, res) => res.end(`hello ${req.url}`));
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  try {
    const program = `const out = []; for (const url of ['http://127.0.0.1:${port}/a', 'http://127.0.0.1:${port}/b']) { try { out.push(await (await fetch(url)).text()) } catch (e) { out.push(e.message) } } return out`;
    // spawnSync would block the server's event loop: run the CLI asynchronously.
    const { spawn } = await import('node:child_process');
    const go = (args: string[]) => new Promise<any>((resolve) => {
      const [command, ...rest] = run === binary ? [BIN, ...args] : [process.execPath, join(repoRoot, 'host/cli/bin.ts'), ...args];
      const child = spawn(command!, rest, { cwd: fixtures, env: { PATH: '/usr/bin:/bin' } });
      let out = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.on('close', () => resolve(decodeJson(out)));
      child.stdin.end(program);
    });
    const allowed = await go(['run', '--json', '--allow-host', `127.0.0.1:${port}`, '-']);
    assert.equal(allowed.value, ['hello /a', 'hello /b']);
    assert.equal(allowed.sandbox.network, { mode: 'allowlist', allowed: [{ host: '127.0.0.1', port, count: 2 }], denied: [] });
    assert.is(allowed.sandbox.denied, false);
    const narrowed = await go(['run', '--json', '--allow-host', '127.0.0.0/8', '--deny-host', `127.0.0.1:${port}`, '-']);
    assert.equal(narrowed.value, Array(2).fill(`blocked by ptc network policy: 127.0.0.1:${port} is not allowed (127.0.0.1:${port})`));
    assert.is(narrowed.sandbox.denied, true);
    // --deny-host adds to the deny list of an allowlist from --config, which keeps its allow list.
    const configPath = join(mkdtempSync(join(tmpdir(), 'ptc-network-cli-')), 'config.json');
    writeFileSync(configPath, JSON.stringify({ policy: { mode: 'workspace-write', network: { allow: ['127.0.0.0/8'], deny: ['127.0.0.1:1'] } } }));
    const configured = await go(['run', '--json', '--config', configPath, '-']);
    assert.equal(configured.value, ['hello /a', 'hello /b']);
    const configuredNarrowed = await go(['run', '--json', '--config', configPath, '--deny-host', `127.0.0.1:${port}`, '-']);
    assert.equal(configuredNarrowed.value, Array(2).fill(`blocked by ptc network policy: 127.0.0.1:${port} is not allowed (127.0.0.1:${port})`));
    rmSync(dirname(configPath), { recursive: true, force: true });
  } finally {
    server.close();
  }
});

both('the allowlist flags name what is wrong and exit 2', (run) => {
  const cases: Array<[string[], string]> = [
    [['--allow-host', 'bad host'], "ptc: sandbox policy: network: allow[0] 'bad host' contains white space"],
    [['--deny-host', 'x.example.com'], 'ptc: --deny-host narrows an allowlist: give --allow-host too (or policy.network.allow in --config)'],
    [['--allow-host', 'x.example.com', '--allow-network'], 'ptc: --allow-network opens or closes the whole network; it cannot be combined with --allow-host or --deny-host'],
    [['--sandbox', 'full-access', '--allow-host', 'x.example.com'], 'ptc: sandbox policy: a network allowlist needs a confined mode ("read-only" or "workspace-write"); "full-access" restricts nothing'],
  ];
  for (const [flags, message] of cases) {
    const { code, stderr } = run(['run', ...flags, '-'], 'return 1');
    assert.is(code, 2, stderr);
    assert.is(stderr.split('\n')[0], message);
  }
});

both('each repeatable flag takes one value: a program file after --allow-host, --deny-host or --writable-root is the program', (run) => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-network-cli-'));
  try {
    const program = join(dir, 'program.ts');
    writeFileSync(program, "return ['from the file', process.env.HTTPS_PROXY]\n");
    const { code, stdout, stderr } = run(['run', '--json', '--allow-host', 'api.example.com', '--deny-host', 'api.example.com:25', '--writable-root', dir, program], 'return "from stdin"');
    assert.is(stderr, '');
    assert.is(code, 0);
    const result = decodeJson(stdout) as any;
    assert.equal(result.value, ['from the file', 'http://127.0.0.1:3128']);
    assert.equal(result.sandbox.network, { mode: 'allowlist', allowed: [], denied: [] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

both('node-permission cannot enforce an allowlist: sandbox-unavailable, exit 1', (run) => {
  const { code, stderr } = run(['run', '--sandbox-backend', 'node-permission', '--allow-host', 'x.example.com', '-'], 'return 1');
  assert.is(code, 1);
  assert.is(stderr.trim(), 'ptc: program failed (sandbox-unavailable): a network allowlist needs the "bwrap" backend: Node\'s permission model can only allow or refuse the whole network, not single hosts');
});

test.run();
