// The far side of a stdio-only transport (SSH, `docker exec -i`, `kubectl exec -i`): started as
// `node bootstrap.mjs --relay`, it starts the real carrier on this machine with the same layout as
// a local launch (control on fd 3, stdout and stderr pipes, its own process group, under this
// machine's sandbox) and frames those streams onto its own stdio (protocol/mux.ts). It carries
// bytes: what the control frames say is none of its business.
//
// Nothing the program starts may outlive the run here, so the carrier's tree is killed when the
// host asks (K), when the host's stream ends (connection dropped, host killed), and when the host
// has been silent past the watchdog (a frozen host, or a connection that died without an EOF).
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { PROTOCOL_REVISION } from '../wire/revision.ts';
import { createMuxReader, muxChunks, muxFrame, type MuxType, type RelayHello, type RelayStart } from '../wire/mux.ts';
import { killChildTree, treeSpawnOptions } from '../supervision/process-tree.ts';
import { removeTreeSync } from '../supervision/remove-tree.ts';
import { pipeDrainer } from '../supervision/pipe-drain.ts';
import { filterStdio, sendFilter } from '../supervision/seccomp-fd.ts';
import { carrierLaunch, SOURCE_FD, sourceOf, type CarrierLaunch } from '../supervision/launch.ts';
import { sweepHostDirectoriesSync } from '../supervision/host-temp.ts';
import { DiskWatch, diskMessage, ioAccountingAvailable, ramBackedDirectories } from '../supervision/disk-usage.ts';
import { limitsUnavailable, relayLimits, type RelayLimits } from './limits.ts';
import { createMuxStreams, type MuxStreams } from '../wire/mux-streams.ts';
import { listenForProxy } from './network.ts';

/** Exit status of a relay that could not do its job; the host reads the reason from its F frame or stderr. */
const RELAY_FAILED = 70;
/** How long the carrier's pipes may stay open after it exited before the relay reports the exit anyway. */
const EXIT_DRAIN_MS = 2_000;
/** Control bytes from the carrier take a fresh disk sample first unless one is this recent (ms): output is many small frames. */
const CONTROL_SAMPLE_MS = 5;

/** Serves one carrier over this process's stdin and stdout, then exits. The carrier runs the bytes
 * this relay runs from when its module came from a data: URL (`moduleUrl`), else the file at `bootstrapPath`. */
export function runRelay(bootstrapPath: string, moduleUrl: string): void {
  const source = sourceOf(moduleUrl);
  const out = (type: MuxType, payload?: Uint8Array): void => void process.stdout.write(muxFrame(type, payload));
  let child: ChildProcess | undefined;
  let launch: CarrierLaunch | undefined;
  let limits: RelayLimits | undefined;
  let streams: MuxStreams | undefined;
  let finished = false;
  let watchdog: NodeJS.Timeout | undefined;
  let watchdogMs = 0;
  let disk: DiskWatch | undefined;
  /** Why this relay killed the carrier for a limit: told to the host in the X frame. */
  let overLimit: string | undefined;

  const finish = (type: 'X' | 'F', payload: string): void => {
    if (finished) return;
    finished = true;
    clearTimeout(watchdog);
    disk?.stop();
    try {
      if (launch?.privateTmp !== undefined) removeTreeSync(launch.privateTmp);
      if (launch?.networkDirectory !== undefined) removeTreeSync(launch.networkDirectory);
    } catch {
      // What could not be removed stays; the exit frame must still reach the host.
    }
    limits?.release();
    out(type, Buffer.from(payload));
    // stdout is a pipe or socket, written synchronously on Linux: the frame is out before exit.
    process.exit(type === 'X' ? 0 : RELAY_FAILED);
  };
  const fail = (message: string): void => {
    if (child?.pid !== undefined) killChildTree(child);
    finish('F', message);
  };
  const armWatchdog = (): void => {
    clearTimeout(watchdog);
    if (watchdogMs > 0) watchdog = setTimeout(() => kill(), watchdogMs);
  };
  const kill = (): void => {
    if (child?.pid !== undefined) killChildTree(child);
    else if (launch === undefined) process.exit(0);
  };

  const start = (spec: RelayStart): void => {
    watchdogMs = spec.watchdogMs;
    armWatchdog();
    const diskMb = spec.maxDiskMb ?? null;
    if (diskMb !== null && (!Number.isSafeInteger(diskMb) || diskMb <= 0)) return fail(`invalid start frame: maxDiskMb ${JSON.stringify(diskMb)}`);
    // Fail closed: a limit the host was promised must not silently go unwatched here.
    if (diskMb !== null && !ioAccountingAvailable()) return fail(`maxDiskMb (${diskMb} MiB) cannot be enforced on ${process.platform}: there is no /proc/<pid>/io to measure what the carrier's process tree writes (set maxDiskMb: null for none)`);
    // What relays killed with -9 left here: they cannot remove it themselves.
    sweepHostDirectoriesSync();
    const maxMemoryMb = spec.maxMemoryMb ?? null;
    const unmeasured = maxMemoryMb === null ? undefined : limitsUnavailable('maxMemoryMb');
    if (unmeasured !== undefined) return fail(unmeasured);
    try {
      launch = carrierLaunch(spec, bootstrapPath, source);
    } catch (error) {
      return fail((error as Error).message);
    }
    if (launch.networkDirectory !== undefined) {
      const carried = createMuxStreams((type, payload) => out(type, payload));
      streams = carried;
      try {
        listenForProxy(launch.networkDirectory, carried, (id) => {
          const frame = Buffer.allocUnsafe(4);
          frame.writeUInt32BE(id, 0);
          out('N', frame);
        });
      } catch (error) {
        return fail(`could not listen for the sandbox's network connections in ${launch.networkDirectory}: ${(error as Error).message}`);
      }
    }
    const stdio = filterStdio(['ignore', 'pipe', 'pipe', 'pipe'], launch.seccompFilter);
    if (launch.source !== undefined) {
      while (stdio.length < SOURCE_FD) stdio.push('ignore');
      stdio[SOURCE_FD] = 'pipe';
    }
    const started = spawn(launch.executable, launch.args, { cwd: launch.cwd, env: launch.env, stdio, ...treeSpawnOptions(), windowsHide: true });
    sendFilter(started, launch.seccompFilter);
    child = started;
    if (diskMb !== null && started.pid !== undefined) {
      disk = new DiskWatch(started.pid, diskMb * 1024 * 1024, ramBackedDirectories(launch.writable), (usage) => {
        overLimit = diskMessage(diskMb, usage);
        killChildTree(started);
      });
    }
    if (launch.source !== undefined) {
      const sourcePipe = (started.stdio as unknown as Socket[])[SOURCE_FD]!;
      // A carrier that dies before reading it all closes the pipe: its exit is what gets reported.
      sourcePipe.on('error', () => {});
      sourcePipe.end(launch.source);
    }
    const control = started.stdio[3] as Socket;
    const stdout = started.stdout as Socket;
    const stderr = started.stderr as Socket;
    started.once('error', (error) => {
      if (started.pid === undefined) fail(`could not start the carrier (${launch!.executable}): ${error.message}`);
    });
    if (started.pid === undefined) return;
    // Before the carrier's first run, so a cgroup holds everything the program will start.
    const bounds = relayLimits(started.pid, maxMemoryMb, (type, payload) => out(type, payload), () => killChildTree(started));
    limits = bounds;
    const hello: RelayHello = { revision: PROTOCOL_REVISION, node: process.version, pid: started.pid, memory: bounds.memory, tasks: bounds.tasks, cpu: bounds.cpu };
    out('H', Buffer.from(JSON.stringify(hello)));
    const forward = (type: 'O' | 'E') => (chunk: Buffer): void => {
      for (const frame of muxChunks(type, chunk)) process.stdout.write(frame);
    };
    stdout.on('data', forward('O'));
    stderr.on('data', forward('E'));
    const drainStdio = [pipeDrainer(stdout), pipeDrainer(stderr)];
    const forwards = [forward('O'), forward('E')];
    control.on('data', (chunk: Buffer) => {
      // The carrier's completion must not reach the host ahead of a look at what the tree wrote,
      // or a fill finished between two samples would end ok.
      if (disk?.sampleIfOlder(CONTROL_SAMPLE_MS) === true) return;
      // Bytes a child process wrote before the carrier sent this are already in the stdio pipes:
      // they go first, so the host sees them in the order they were written.
      drainStdio.forEach((drain, index) => drain(forwards[index]!));
      if (bounds.beforeControl()) return;
      for (const frame of muxChunks('C', chunk)) process.stdout.write(frame);
    });
    control.on('error', () => {});
    // The carrier closed its control channel: the host learns it as it would from a local pipe.
    control.once('end', () => out('C'));
    // Why the tree was killed, if it was: the memory or task limit (limits.ts; overLimit) or the disk limit (this file's watch; overDisk).
    const exited = (code: number | null, signal: NodeJS.Signals | null): string => {
      const over = bounds.overLimit();
      const limit = over === undefined ? {} : { overLimit: over.message, ...(over.maxTasks === undefined ? {} : { maxTasks: over.maxTasks }) };
      return JSON.stringify({ code, signal, ...limit, ...(overLimit === undefined ? {} : { overDisk: overLimit }) });
    };
    started.once('close', (code, signal) => finish('X', exited(code, signal)));
    started.once('exit', (code, signal) => {
      bounds.exited();
      // What the program left running in the carrier's group goes with it, as the host does locally.
      killChildTree(started);
      // A descendant that escaped the kill can hold the pipes open; the exit status is what counts.
      setTimeout(() => finish('X', exited(code, signal)), EXIT_DRAIN_MS).unref();
    });
    toCarrier = (chunk) => {
      if (control.writable) control.write(chunk);
    };
  };

  let toCarrier: ((chunk: Buffer) => void) | undefined;
  const reader = createMuxReader(
    (type, payload) => {
      armWatchdog();
      if (child === undefined && launch === undefined) {
        if (type !== 'S') return fail(`the host's first frame must be "S" (start), got "${type}"`);
        let spec: RelayStart;
        try {
          spec = JSON.parse(payload.toString('utf8')) as RelayStart;
        } catch (error) {
          return fail(`unreadable start frame: ${(error as Error).message}`);
        }
        return start(spec);
      }
      if (type === 'C') toCarrier?.(Buffer.from(payload));
      else if (type === 'K') kill();
      else if (type === 'W') limits?.begin(cpuBudget(payload));
      else if (type === 'D') limits?.end();
      else if ((type === 'B' || type === 'A' || type === 'Z') && streams !== undefined) {
        const problem = streams.receive(type, payload);
        if (problem !== undefined) fail(`unreadable stream frame from the host: ${problem}`);
      }
      else if (type !== 'P') fail(`unexpected "${type}" frame from the host`);
    },
    (message) => fail(message),
  );
  process.stdin.on('data', (chunk: Buffer) => reader.push(chunk));
  // The host is gone (or closed its end): nothing started for it may keep running.
  const hostGone = (): void => {
    kill();
    if (child === undefined) process.exit(0);
  };
  process.stdin.on('end', hostGone);
  process.stdin.on('error', hostGone);
  // A host that vanished makes writes fail (EPIPE); a bug here must not orphan the carrier either.
  process.stdout.on('error', hostGone);
  process.on('uncaughtException', (error) => {
    kill();
    process.stderr.write(`ptc relay: ${error.stack ?? String(error)}\n`);
    process.exit(RELAY_FAILED);
  });
}


/** The budget of a W frame; anything but a positive integer is none. */
function cpuBudget(payload: Buffer): number | null {
  try {
    const { cpuTimeMs } = JSON.parse(payload.toString('utf8')) as { cpuTimeMs?: unknown };
    return typeof cpuTimeMs === 'number' && Number.isSafeInteger(cpuTimeMs) && cpuTimeMs > 0 ? cpuTimeMs : null;
  } catch {
    return null;
  }
}
