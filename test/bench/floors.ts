// The floors the bench divides by, measured in the same run: a bare `node -e 0` start (process
// floor) and one JSON line at a time over an fd-3 pipe to echo.ts (transport floor).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { exec } from './stats.ts';

const ECHO = join(import.meta.dirname, 'echo.ts');
const NODE = process.execPath;

/** One `node -e 0`, spawned and exited. */
export const bareNode = (): Promise<string> => exec(NODE, ['-e', '0']);

/** One JSON-line request/response at a time over fd 3 to echo.ts: returns a timed round trip and a close. */
export async function rawPipe(): Promise<{ roundTrip: () => Promise<void>; close: () => Promise<void> }> {
  const child = spawn(NODE, [ECHO], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] });
  const socket = child.stdio[3] as Socket;
  let pending = '';
  let reply: () => void = () => {};
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf('\n')) !== -1) {
      JSON.parse(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
      reply();
    }
  });
  let id = 0;
  const roundTrip = (): Promise<void> =>
    new Promise((resolve) => {
      reply = resolve;
      socket.write(`${JSON.stringify({ id: ++id, method: 'ping', args: [id] })}\n`);
    });
  return {
    roundTrip,
    close: async () => {
      socket.end();
      const [code] = await once(child, 'close');
      if (code !== 0) throw new Error(`echo.ts exited with ${code}`);
    },
  };
}

/** Round trips/s of one JSON line at a time over fd 3 to echo.ts, after the first reply. */
export async function rawPingRate(n: number): Promise<number> {
  const pipe = await rawPipe();
  await pipe.roundTrip();
  const start = performance.now();
  for (let id = 1; id < n; id++) await pipe.roundTrip();
  const rate = (n - 1) / ((performance.now() - start) / 1000);
  await pipe.close();
  return rate;
}
