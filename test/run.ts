// Runs every uvu suite under test/ in its own Node process (suites start carriers and count
// processes, so they must not share one), then prints one closing line: "N passed, N failed".
// Integration suites run two at a time (PTC_TEST_JOBS): they spend most of their wall time waiting
// on carriers, deadlines and processes settling (hostile.test.ts used 24 s of CPU in 84 s), and
// each looks only at its own processes, temp directories and servers. Every other suite, and any
// marked "runs alone", has the machine to itself.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
// The host keeps each journal's row key under $XDG_STATE_HOME (host/execution/journal/key.ts): the
// suites' journals are temporary, so their keys go to a state directory of this run, removed at the end.
const state = mkdtempSync(join(tmpdir(), 'ptc-test-state-'));
process.env.XDG_STATE_HOME = state;
process.on('exit', () => rmSync(state, { recursive: true, force: true }));
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

/** Runs one suite; its output (stdout and stderr, as they came) is printed whole when it ends, so two suites never interleave. */
function runSuite(file: string, launch?: string): Promise<{ passed: number; failed: number; code: number | null; output: string }> {
  return new Promise((resolve) => {
    const env = launch === undefined ? process.env : { ...process.env, PTC_TEST_LAUNCH: launch };
    const child = spawn(process.execPath, [file], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk;
      output += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('close', (code) => {
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1] ?? 0);
      const passed = Number(/Passed:\s+(\d+)/.exec(plain)?.[1] ?? 0);
      resolve({ passed, failed: Math.max(total - passed, code === 0 ? 0 : 1), code, output });
    });
  });
}

/** How many integration suites run at once: PTC_TEST_JOBS, 2 when unset. */
function jobCount(): number {
  const text = process.env.PTC_TEST_JOBS ?? '2';
  const count = Number(text);
  if (!Number.isInteger(count) || count < 1) throw new Error(`PTC_TEST_JOBS must be a positive integer, got ${JSON.stringify(text)}`);
  return count;
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
/** One suite under one launch, in the order they start. */
const queue: Array<{ file: string; launch: string | undefined; label: string; alone: boolean }> = [];
for (const launch of LAUNCHES) {
  for (const file of all) {
    const name = relative(root, file);
    if (only.length > 0 && !only.some((pattern) => name.includes(pattern))) continue;
    if (launch !== undefined && !(RELAUNCHED.some((folder) => name.startsWith(folder)) && (await usesTestLaunch(file, launch)))) continue;
    const label = launch === undefined ? name : `${name} [${launch}]`;
    queue.push({ file, launch, label, alone: await runsAlone(file, launch) });
  }
}
const JOBS = jobCount();
const began = performance.now();
// Suites start in queue order: one that runs alone waits for the running ones to end and holds back
// the rest until it ends; the others start while fewer than JOBS run.
await new Promise<void>((allDone) => {
  let next = 0;
  let running = 0;
  let aloneRunning = false;
  const startMore = (): void => {
    while (next < queue.length && !aloneRunning && running < JOBS && !(queue[next]!.alone && running > 0)) {
      const job = queue[next++]!;
      running++;
      aloneRunning = job.alone;
      const started = performance.now();
      void runSuite(job.file, job.launch).then((result) => {
        process.stdout.write(`\n# ${job.label}\n${result.output}`);
        timings.push([job.label, performance.now() - started]);
        passed += result.passed;
        failed += result.failed;
        if (result.code !== 0 || result.failed > 0) failedSuites.push(job.label);
        running--;
        if (job.alone) aloneRunning = false;
        startMore();
      });
    }
    if (next === queue.length && running === 0) allDone();
  };
  startMore();
});

/** Whether a suite must have the machine to itself: every suite outside test/integration/ (the
 * attack suites share their test users and look for those users' processes, e2e drives terminals
 * and the built binary with short waits, release builds), one marked "runs alone", and every suite
 * of the podman launch, which share one container. */
async function runsAlone(file: string, launch: string | undefined): Promise<boolean> {
  if (!relative(root, file).startsWith('test/integration/') || launch === 'podman') return true;
  return (await readFile(file, 'utf8')).includes('runs alone');
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
process.stdout.write(`\n# slowest suites (of ${timings.length}, ${seconds(timings.reduce((sum, [, ms]) => sum + ms, 0))} s in all; ${seconds(performance.now() - began)} s of wall time, up to ${JOBS} integration suites at once)\n${timings.slice(0, 25).map(([label, ms]) => `#   ${seconds(ms).padStart(6)} s  ${label}`).join('\n')}\n`);
if (failedSuites.length > 0) process.stdout.write(`\nfailed suites:\n${failedSuites.map((s) => `  ${s}`).join('\n')}\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exitCode = failed > 0 ? 1 : 0;
