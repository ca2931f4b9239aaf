// `ptc resident start|status|stop`: this user's resident pools, by hand (docs/cli.md). `ptc run`
// uses a pool that serves its environment; PTC_RESIDENT=1 starts one on demand.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isSea } from 'node:sea';
import { residentPlace } from '../resident.ts';
import { open, request, startPool } from './resident-client.ts';
import { UsageError } from './usage-error.ts';

export interface ResidentArgs {
  action: 'start' | 'status' | 'stop';
  json: boolean;
  'idle-ms'?: string;
}

/** Runs `ptc resident <action>`; resolves with the exit code. */
export async function residentCommand(args: ResidentArgs, version: string): Promise<number> {
  if (!isSea()) throw new UsageError('the resident pool is part of the single executable (dist/ptc); from source each `ptc run` starts its own carrier');
  if (args.action === 'start') return start(args, version);
  if (args.action === 'status') return status(args, version);
  return stop(version);
}

async function start(args: ResidentArgs, version: string): Promise<number> {
  const env = { ...process.env };
  if (args['idle-ms'] !== undefined) {
    const value = Number(args['idle-ms']);
    if (!Number.isInteger(value) || value <= 0) throw new UsageError(`--idle-ms must be a positive whole number of milliseconds, got ${JSON.stringify(args['idle-ms'])}`);
    env.PTC_RESIDENT_IDLE_MS = String(value);
  }
  const place = residentPlace(version, true);
  if ('refused' in place) throw new UsageError(`no resident pool here: ${place.refused}`);
  const session = await open(place.directory, place.socket);
  if (!('declined' in session)) {
    session.socket.destroy();
    if (session.identity === place.identity) {
      process.stdout.write(`ptc resident: pool ${session.pid} already serves this environment (${place.socket})\n`);
      return 0;
    }
  }
  const pid = await startPool(process.cwd(), env, true);
  if (pid === undefined) {
    process.stderr.write(`ptc resident: the pool did not start (${place.socket})\n`);
    return 1;
  }
  process.stdout.write(`ptc resident: pool ${pid} started (${place.socket})\n`);
  return 0;
}

interface PoolStatus {
  socket: string;
  pid?: number;
  runs?: number;
  running?: number;
  warmDirectories?: number;
  idleMs?: number;
  version?: string;
  thisEnvironment?: boolean;
  /** Why it gave no status: a socket nobody listens on is left by a pool that was killed. */
  unreachable?: string;
}

async function status(args: ResidentArgs, version: string): Promise<number> {
  const place = residentPlace(version, false);
  // Sockets in a directory that is not this user's alone could be anyone's: none is asked.
  if ('refused' in place) {
    process.stdout.write(args.json ? `${JSON.stringify({ refused: place.refused, pools: [] })}\n` : `ptc resident: no pool is running (${place.refused})\n`);
    return 0;
  }
  const pools: PoolStatus[] = [];
  for (const socket of sockets(place.directory)) {
    const session = await open(place.directory, socket);
    if ('declined' in session) {
      pools.push({ socket, unreachable: session.declined });
      continue;
    }
    request(session, { type: 'status' });
    const answer = await session.lines.next();
    session.socket.destroy();
    if (answer?.type !== 'status') {
      pools.push({ socket, unreachable: 'no status' });
      continue;
    }
    pools.push({
      socket,
      pid: Number(answer.pid),
      runs: Number(answer.runs),
      running: Number(answer.running),
      warmDirectories: Number(answer.warmDirectories),
      idleMs: Number(answer.idleMs),
      version: String(answer.version),
      thisEnvironment: session.identity === place.identity,
    });
  }
  if (args.json) process.stdout.write(`${JSON.stringify({ directory: place.directory, socket: place.socket, pools })}\n`);
  else if (pools.length === 0) process.stdout.write('ptc resident: no pool is running\n');
  else {
    for (const pool of pools) {
      process.stdout.write(pool.unreachable !== undefined
        ? `${pool.socket}: nobody answers (${pool.unreachable})\n`
        : `pool ${pool.pid}: ptc ${pool.version}, ${pool.runs} runs, ${pool.running} running, carriers kept for ${pool.warmDirectories} directories, exits after ${pool.idleMs} ms idle${pool.thisEnvironment ? ', serves this environment' : ''} (${pool.socket})\n`);
    }
  }
  return 0;
}

async function stop(version: string): Promise<number> {
  const place = residentPlace(version, false);
  let stopped = 0;
  const directory = 'refused' in place ? undefined : place.directory;
  for (const socket of directory === undefined ? [] : sockets(directory)) {
    const session = await open(directory!, socket);
    if ('declined' in session) continue;
    request(session, { type: 'stop' });
    const answer = await session.lines.next();
    if (answer?.type !== 'stopping') continue;
    // The pool ends its runs and carriers, then exits: wait for that, so that what follows finds none.
    await session.lines.next();
    for (let waited = 0; waited < 10_000 && alive(session.pid); waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    process.stdout.write(`ptc resident: stopped pool ${session.pid}\n`);
    stopped++;
  }
  if (stopped === 0) process.stdout.write('ptc resident: no pool is running\n');
  return 0;
}

function sockets(directory: string): string[] {
  try {
    return readdirSync(directory).filter((name) => name.endsWith('.sock')).sort().map((name) => join(directory, name));
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
