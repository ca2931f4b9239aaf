// The allowlist proxy's connections as streams of the relay's multiplex (wire/mux-streams.ts),
// between two ends in this process over real Unix sockets: bytes both ways with half-close, a reset
// that reaches the other side, a window that stops a sender whose receiver does not read, and
// malformed frames named.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createMuxStreams, STREAM_WINDOW, type MuxStreams } from '../../../wire/mux-streams.ts';
import type { MuxType } from '../../../wire/mux.ts';

const directory = mkdtempSync(join(tmpdir(), 'ptc-mux-streams-'));
const servers: Server[] = [];
const sockets: Socket[] = [];
test.after(() => {
  for (const socket of sockets) socket.destroy();
  for (const server of servers) server.close();
  rmSync(directory, { recursive: true, force: true });
});

/** A listener at `name` whose connections go to `onConnection`. */
async function listen(name: string, onConnection: (socket: Socket) => void): Promise<string> {
  const path = join(directory, name);
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.push(socket);
    onConnection(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return path;
}

/** Two ends wired to each other, as the relay and the host are; `sent.far` counts the B payload bytes the far end sent. */
function pair(): { far: MuxStreams; near: MuxStreams; sent: { far: number } } {
  const sent = { far: 0 };
  let near: MuxStreams;
  // Frames are delivered on a later turn, as a real transport does.
  const far = createMuxStreams((type: MuxType, payload: Buffer) => {
    if (type === 'B') sent.far += payload.length - 4;
    setImmediate(() => near.receive(type as 'B' | 'A' | 'Z', payload));
  });
  near = createMuxStreams((type: MuxType, payload: Buffer) => setImmediate(() => far.receive(type as 'B' | 'A' | 'Z', payload)));
  return { far, near, sent };
}

/** A sandbox-side client connected through the far end to `target`, on the near end. */
async function through(target: string, ends: ReturnType<typeof pair>, id: number): Promise<Socket> {
  const entry = await listen(`entry-${id}`, (socket) => {
    ends.far.add(id, socket);
    const upstream = connect({ path: target, allowHalfOpen: true });
    sockets.push(upstream);
    ends.near.add(id, upstream);
  });
  const client = connect({ path: entry, allowHalfOpen: true });
  sockets.push(client);
  await new Promise((resolve) => client.once('connect', resolve));
  return client;
}

function collect(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => void (text += chunk)).once('end', () => resolve(text));
  });
}

test('bytes go both ways; a client that ends its side still gets the whole answer, then both close', async () => {
  const target = await listen('answer', (socket) => {
    let asked = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => void (asked += chunk)).once('end', () => socket.end(`you said ${asked.length} bytes: ${asked.slice(0, 5)}`));
  });
  const ends = pair();
  const client = await through(target, ends, 1);
  const answer = collect(client);
  client.end('hello'.repeat(50_000));
  assert.is(await answer, 'you said 250000 bytes: hello');
  await new Promise((resolve) => client.once('close', resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal([ends.far.size, ends.near.size], [0, 0]);
});

test('a reset on one side drops the other: a write the destination can no longer take ends the stream on both ends', async () => {
  // The destination drops the connection; the client sees its end (as over TCP), writes on, and
  // that write fails over there (EPIPE), which resets the stream on the client's side too.
  const target = await listen('reset', (socket) => void socket.once('data', () => socket.destroy()));
  const ends = pair();
  const client = await through(target, ends, 2);
  client.on('error', () => {});
  const ended = new Promise((resolve) => client.once('end', resolve));
  client.resume();
  client.write('x');
  await ended;
  client.write('more');
  while (ends.far.size + ends.near.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
  client.destroy();
});

test('a receiver that does not read stops the sender at the window, and reading lets the rest through', async () => {
  const total = 16 * 1024 * 1024;
  let destination!: Socket;
  let accept!: () => void;
  const accepted = new Promise<void>((resolve) => (accept = resolve));
  const sinkPath = await listen('sink', (socket) => {
    destination = socket;
    socket.pause();
    accept();
  });
  const ends = pair();
  const client = await through(sinkPath, ends, 3);
  await accepted;
  client.end(Buffer.alloc(total, 7));
  // Wait until the far end has sent nothing more for a while: the window is full.
  let last = -1;
  while (ends.sent.far !== last) {
    last = ends.sent.far;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  // The kernel's socket buffers on the way hold some too; far less than what was written.
  assert.ok(ends.sent.far < total / 4, `${ends.sent.far} of ${total} bytes went out past a window of ${STREAM_WINDOW}`);
  let received = 0;
  destination.on('data', (chunk: Buffer) => void (received += chunk.length));
  destination.resume();
  await new Promise((resolve) => destination.once('end', resolve));
  assert.is(received, total);
});

test('malformed frames are named; frames for a stream already gone are dropped', () => {
  const ends = createMuxStreams(() => {});
  assert.is(ends.receive('B', Buffer.from([0, 1])), 'a "B" frame of 2 bytes has no stream id');
  assert.is(ends.receive('A', Buffer.from([0, 0, 0, 9, 1])), 'an "A" frame must be 8 bytes, got 5');
  assert.is(ends.receive('Z', Buffer.from([0, 0, 0, 9, 2])), 'a "Z" frame must be 5 bytes ending in 0 or 1, got 5 bytes');
  assert.is(ends.receive('B', Buffer.from([0, 0, 0, 9, 65])), undefined);
  assert.is(ends.receive('Z', Buffer.from([0, 0, 0, 9, 1])), undefined);
});

test.run();
