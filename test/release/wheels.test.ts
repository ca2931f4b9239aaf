// The Python wheels that `npm run release` (and `node release/wheels.ts`) write: each is a valid
// wheel by Python's own zipfile and pip, installs with `pip install --no-index` into a fresh venv
// with no network (`unshare -n` when root, as in CI), and runs a program with a Python tool; the
// platform wheel alone puts both the client and the executable on the machine.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';
import { ensureRelease, file, OUT, VERSION, WHEEL_TAGS } from './artifacts.ts';

ensureRelease();

const PYTHON = '/usr/bin/python3';
const CLIENT_WHEEL = join(OUT, `ptc_client-${VERSION}-py3-none-any.whl`);
const wheelOf = (id: string): string => join(OUT, `ptc-${VERSION}-py3-none-${WHEEL_TAGS[id]}.whl`);
const offline = process.getuid?.() === 0 ? ['/usr/bin/unshare', '-n', '--'] : [];
const scratch: string[] = [];
test.after(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

function run(argv: string[], opts: { cwd?: string; input?: string } = {}) {
  const result = spawnSync(argv[0], argv.slice(1), {
    cwd: opts.cwd ?? tmpdir(),
    input: opts.input,
    encoding: 'utf8',
    timeout: 180_000,
    // No PYTHONPATH or pip configuration from the caller: what is imported comes from the venv.
    env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', PIP_DISABLE_PIP_VERSION_CHECK: '1', PYTHONDONTWRITEBYTECODE: '1' },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr + (result.error ? String(result.error) : '') };
}

/** A fresh venv with `wheel` installed from the file alone, without an index or a network. */
function venvWith(wheel: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-wheel-venv-'));
  scratch.push(dir);
  const made = run([PYTHON, '-m', 'venv', dir]);
  assert.is(made.code, 0, made.stderr);
  const installed = run([...offline, join(dir, 'bin', 'pip'), 'install', '--no-index', '--no-cache-dir', wheel]);
  assert.is(installed.code, 0, installed.stdout + installed.stderr);
  return dir;
}

// Lists each entry (name, mode, size) and checks every RECORD line against the bytes, with
// Python's own zipfile: an independent reader of what release/zip.ts writes.
const INSPECT = `
import base64, hashlib, json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
names = z.namelist()
record = [n for n in names if n.endswith(".dist-info/RECORD")]
assert len(record) == 1, record
lines = z.read(record[0]).decode().splitlines()
listed = set()
for line in lines:
    path, digest, size = line.split(",")
    listed.add(path)
    if path == record[0]:
        assert digest == "" and size == "", line
        continue
    data = z.read(path)
    assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(), path
    assert int(size) == len(data), path
assert listed == set(names), sorted(set(names) ^ listed)
info = record[0][: -len("RECORD")]
print(json.dumps({
    "entries": {i.filename: [i.external_attr >> 16 & 0o777, i.file_size] for i in z.infolist()},
    "wheel": z.read(info + "WHEEL").decode(),
    "metadata": z.read(info + "METADATA").decode().split("\\n\\n")[0],
}))
`;

function inspectWheel(wheel: string): { entries: Record<string, [number, number]>; wheel: string; metadata: string } {
  const result = run([PYTHON, '-c', INSPECT, wheel]);
  assert.is(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

const CLIENT_FILES = ['__init__.py', '_async.py', '_protocol.py', '_sync.py', 'py.typed'].map((name) => `ptc_client/${name}`);

test('the client wheel: ptc_client alone, its RECORD complete and exact, tagged py3-none-any', () => {
  const wheel = inspectWheel(CLIENT_WHEEL);
  const info = `ptc_client-${VERSION}.dist-info`;
  assert.equal(Object.keys(wheel.entries).sort(), [...CLIENT_FILES, `${info}/METADATA`, `${info}/WHEEL`, `${info}/RECORD`].sort());
  assert.match(wheel.wheel, /^Root-Is-Purelib: true$/m);
  assert.match(wheel.wheel, /^Tag: py3-none-any$/m);
  assert.match(wheel.metadata, new RegExp(`^Name: ptc-client\nVersion: ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
});

for (const id of Object.keys(WHEEL_TAGS)) {
  test(`the ${id} wheel: the client, and that platform's release binary as the script ptc (mode 755)`, () => {
    const wheel = inspectWheel(wheelOf(id));
    const script = `ptc-${VERSION}.data/scripts/ptc${id.startsWith('win-') ? '.exe' : ''}`;
    const info = `ptc-${VERSION}.dist-info`;
    assert.equal(Object.keys(wheel.entries).sort(), [...CLIENT_FILES, script, `${info}/METADATA`, `${info}/WHEEL`, `${info}/RECORD`].sort());
    assert.equal(wheel.entries[script], [0o755, readFileSync(file(id)).length]);
    assert.match(wheel.wheel, new RegExp(`^Tag: py3-none-${WHEEL_TAGS[id]}$`, 'm'));
    assert.match(wheel.wheel, /^Root-Is-Purelib: false$/m);
    assert.match(wheel.metadata, /^Name: ptc$/m);
  });
}

const PROGRAM = 'const xs = await tools.double([1, 2, 3]); inspect(xs.length); return { xs, big: 12345678901234567890n }';
const DRIVER = `
import json, os, sys
import ptc_client
from ptc_client import PtcClient
from ptc_client._protocol import default_binary
binary = sys.argv[1] if len(sys.argv) > 1 else None
with PtcClient(binary, config={"timeoutMs": 60000}) as ptc:
    out = []
    result = ptc.run(sys.stdin.read(), tools={"tools.double": lambda xs: [x * 2 for x in xs]}, on_output=out.append)
print(json.dumps({"module": ptc_client.__file__, "binary": binary or default_binary(), "status": result["status"],
                  "value": result.get("value"), "exact": (result.get("value") or {}).get("big") == 12345678901234567890,
                  "output": out}))
`;

test('the client wheel installs offline into a fresh venv and runs a program with a Python tool', () => {
  const venv = venvWith(CLIENT_WHEEL);
  const result = run([...offline, join(venv, 'bin', 'python'), '-c', DRIVER, join(repoRoot, 'dist', 'ptc')], { input: PROGRAM });
  assert.is(result.code, 0, result.stderr);
  const out = JSON.parse(result.stdout);
  assert.ok(out.module.startsWith(venv), `ptc_client came from ${out.module}, not the venv`);
  assert.is(out.status, 'ok');
  assert.equal(out.value.xs, [2, 4, 6]);
  assert.is(out.exact, true, 'the bigint arrived in Python as the exact int');
});

test('the linux-x64 wheel alone installs offline and puts both the client and ptc in the venv: PtcClient() finds it', () => {
  const venv = venvWith(wheelOf('linux-x64'));
  const version = run([join(venv, 'bin', 'ptc'), 'version']);
  assert.is(version.code, 0, version.stderr);
  assert.match(version.stdout, `ptc ${VERSION}`);
  const result = run([...offline, join(venv, 'bin', 'python'), '-c', DRIVER], { input: PROGRAM });
  assert.is(result.code, 0, result.stderr);
  const out = JSON.parse(result.stdout);
  assert.is(out.binary, join(venv, 'bin', 'ptc'));
  assert.ok(out.module.startsWith(venv));
  assert.is(out.status, 'ok');
  assert.equal(out.value.xs, [2, 4, 6]);
  assert.equal(out.output.map((entry: { text?: string }) => entry.text), ['3\n']);
});

test('pip refuses the wheels of other platforms here: the tags are real', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-wheel-venv-'));
  scratch.push(dir);
  assert.is(run([PYTHON, '-m', 'venv', '--without-pip', dir]).code, 0);
  for (const id of ['linux-arm64', 'darwin-x64', 'win-x64']) {
    const refused = run([PYTHON, '-m', 'pip', '--python', join(dir, 'bin', 'python'), 'install', '--no-index', '--dry-run', wheelOf(id)]);
    const text = refused.stdout + refused.stderr;
    // pip >= 22.3 has --python; Debian 12's pip 23 does. Either way the wheel is refused by tag.
    assert.is.not(refused.code, 0, text);
    assert.match(text, /is not a supported wheel on this platform|no such option: --python/);
  }
});

test('PtcClient() with no ptc installed and none on PATH says what to do', () => {
  const venv = venvWith(CLIENT_WHEEL);
  const result = run([join(venv, 'bin', 'python'), '-c', 'from ptc_client import PtcClient\ntry:\n    PtcClient()\nexcept Exception as e:\n    print(type(e).__name__, e)']);
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stdout, /^PtcError no ptc executable: none in .*\/bin .* and no ptc on PATH; pass binary=/);
});

test('node release/wheels.ts (no registry, no network) writes the same bytes as the release', () => {
  const out = mkdtempSync(join(tmpdir(), 'ptc-wheels-'));
  scratch.push(out);
  // From the release's own binary: dist/ptc may have been rebuilt since (V8's code cache differs per build).
  const result = run([...offline, process.execPath, join(repoRoot, 'release', 'wheels.ts'), '--out', out, '--binary', file('linux-x64')], { cwd: repoRoot });
  assert.is(result.code, 0, result.stderr);
  const written = result.stdout.trim().split('\n');
  assert.equal(written, [join(out, `ptc_client-${VERSION}-py3-none-any.whl`), join(out, `ptc-${VERSION}-py3-none-${WHEEL_TAGS['linux-x64']}.whl`)]);
  assert.ok(readFileSync(written[0]).equals(readFileSync(CLIENT_WHEEL)), 'the client wheel is reproducible');
  assert.ok(readFileSync(written[1]).equals(readFileSync(wheelOf('linux-x64'))), 'the linux-x64 wheel is reproducible');
});

test.run();
