// Runs every uvu suite under test/ in its own Node process (suites start carriers and count
// processes, so they must not share one), then prints one closing line: "N passed, N failed".
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const only = process.argv.slice(2);

async function suites(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'fixtures' && entry.name !== 'bench') found.push(...(await suites(path)));
    else if (entry.name.endsWith('.test.ts')) found.push(path);
  }
  return found.sort();
}

function runSuite(file: string, launch?: string): Promise<{ passed: number; failed: number; code: number | null }> {
  return new Promise((resolve) => {
    const env = launch === undefined ? process.env : { ...process.env, PTC_TEST_LAUNCH: launch };
    const child = spawn(process.execPath, [file], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk;
      process.stdout.write(chunk);
    });
    child.on('close', (code) => {
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1] ?? 0);
      const passed = Number(/Passed:\s+(\d+)/.exec(plain)?.[1] ?? 0);
      resolve({ passed, failed: Math.max(total - passed, code === 0 ? 0 : 1), code });
    });
  });
}

let passed = 0;
let failed = 0;
/** Each suite's wall time, printed slowest first at the end: what CI's duration is made of. */
const timings: Array<[string, number]> = [];
const failedSuites: string[] = [];
// Integration and attack suites that go through the test runtime helper run again against the built
// binary's embedded carrier, against the machine's Node with the bootstrap file, and against that
// Node over SSH (when test/helpers/sshd.sh's server is configured, as .ci/run always does).
/** Folders whose suites run again per launch when they use the test runtime helper. */
const RELAUNCHED = ['test/integration/', 'test/attack/'];
// Suites marked "launch: podman" run once more through `podman exec -i` into the container that
// test/helpers/podman.sh starts (as .ci/run always does).
const LAUNCHES = [undefined, 'embedded', 'node-script', ...(process.env.PTC_TEST_SSH_DESTINATION ? ['ssh'] : []), ...(process.env.PTC_TEST_PODMAN_ROOTLESS_COMMAND ? ['podman'] : [])];
if (!LAUNCHES.includes('ssh')) process.stdout.write('# no PTC_TEST_SSH_DESTINATION: the ssh launch is skipped (eval "$(bash test/helpers/sshd.sh start)" to run it)\n');
if (!LAUNCHES.includes('podman')) process.stdout.write('# no PTC_TEST_PODMAN_ROOTLESS_COMMAND: the podman launch and test/integration/podman.test.ts are skipped (eval "$(bash test/helpers/podman.sh start)" to run them)\n');
const all = await suites(join(root, 'test'));
for (const launch of LAUNCHES) {
  for (const file of all) {
    const name = relative(root, file);
    if (only.length > 0 && !only.some((pattern) => name.includes(pattern))) continue;
    if (launch !== undefined && !(RELAUNCHED.some((folder) => name.startsWith(folder)) && (await usesTestLaunch(file, launch)))) continue;
    const label = launch === undefined ? name : `${name} [${launch}]`;
    process.stdout.write(`\n# ${label}\n`);
    const started = performance.now();
    const result = await runSuite(file, launch);
    timings.push([label, performance.now() - started]);
    passed += result.passed;
    failed += result.failed;
    if (result.code !== 0 || result.failed > 0) failedSuites.push(label);
  }
}

/** Whether a suite runs again under `launch`: it must use the test runtime helper, and may opt out
 * with a marker comment ("launch: source only", or "launch: local only" to skip the ssh launch).
 * The podman launch takes only suites that opt in ("launch: podman"). */
async function usesTestLaunch(file: string, launch: string): Promise<boolean> {
  const source = await readFile(file, 'utf8');
  if (launch === 'ssh' && source.includes('launch: local only')) return false;
  if (launch === 'podman' && !source.includes('launch: podman')) return false;
  return /\b(runProgram|createTestRuntime|runtimesPerTest)\(/.test(source) && !source.includes('launch: source only');
}
timings.sort((a, b) => b[1] - a[1]);
const seconds = (ms: number): string => (ms / 1000).toFixed(1);
process.stdout.write(`\n# slowest suites (of ${timings.length}, ${seconds(timings.reduce((sum, [, ms]) => sum + ms, 0))} s in all)\n${timings.slice(0, 25).map(([label, ms]) => `#   ${seconds(ms).padStart(6)} s  ${label}`).join('\n')}\n`);
if (failedSuites.length > 0) process.stdout.write(`\nfailed suites:\n${failedSuites.map((s) => `  ${s}`).join('\n')}\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exitCode = failed > 0 ? 1 : 0;
