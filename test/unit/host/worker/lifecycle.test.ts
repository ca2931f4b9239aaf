// A carrier's and a warm pool's lifecycles are one state each, moved only along their tables.
// Real Carrier objects and the real pool are driven here through a connection this test plays:
// its handshake line, its exit, its failure to start; a move a table does not list is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PassThrough } from 'node:stream';
import { Lifecycle } from '../../../../host/worker/lifecycle.ts';
import { Carrier, CARRIER_MOVES, type CarrierEvents, type CarrierState } from '../../../../host/worker/carrier.ts';
import { holdPool, POOL_MOVES, replenish, takeCarrier, warmPool, type PoolState } from '../../../../host/worker/pool.ts';
import type { CarrierConnection } from '../../../../host/worker/transports/connection.ts';
import type { CarrierRecipe } from '../../../../host/worker/confinement.ts';
import { PROTOCOL_REVISION } from '../../../../wire/revision.ts';

interface Played {
  connection: CarrierConnection;
  exit(code: number | null, signal: NodeJS.Signals | null): void;
  failToStart(message: string): void;
  killed: number;
}

/** A connection whose carrier this test plays: control bytes are written by hand. */
function playedConnection(): Played {
  const exits: Array<(code: number | null, signal: NodeJS.Signals | null) => void> = [];
  const failures: Array<(message: string) => void> = [];
  const control = new PassThrough();
  const played: Played = {
    killed: 0,
    exit: (code, signal) => {
      for (const listener of exits) listener(code, signal);
    },
    failToStart: (message) => {
      for (const listener of failures) listener(message);
    },
    connection: {
      control,
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      pid: undefined,
      transportTail: '',
      lost: undefined,
      onExit: (listener) => void exits.push(listener),
      onStartFailure: (listener) => void failures.push(listener),
      settled: Promise.resolve(),
      limits: () => {
        throw new Error('not used here');
      },
      kill: () => {
        played.killed++;
      },
      drainStdio: () => {},
      abandonStdio: () => {},
      ref: () => {},
      unref: () => {},
    },
  };
  return played;
}

const HELLO = `${JSON.stringify({ t: 'hello', revision: PROTOCOL_REVISION, node: 'v26.0.0', capabilities: [], key: 'ab'.repeat(32) })}\n`;

/** A carrier on a played connection, and the events it reports. */
function playedCarrier(): { carrier: Carrier; played: Played; events: string[] } {
  const played = playedConnection();
  const events: string[] = [];
  const listener: CarrierEvents = {
    onProtocolError: (message) => void events.push(`protocol: ${message}`),
    onExit: (code, signal) => void events.push(`exit ${code} ${signal}`),
    onSpawnError: (message) => void events.push(`spawn: ${message}`),
    onStdio: () => {},
    onControlLost: () => void events.push('control lost'),
  };
  const carrier = new Carrier({ connection: played.connection, maxMessageBytes: 1 << 20, events: listener });
  return { carrier, played, events };
}

/** What the carrier sent on the control channel, written by the host. */
const hello = (played: Played): void => void played.connection.control.write(HELLO);
/** Asserts that `promise` rejects with a message matching `pattern`. */
async function rejects(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  const outcome = await promise.then(() => 'resolved', (error: Error) => error.message);
  assert.match(outcome, pattern);
}
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('a carrier boots, is ready after its handshake, exits, and ends when the host closes its channel', async () => {
  const { carrier, played, events } = playedCarrier();
  assert.is(carrier.state, 'booting');
  hello(played);
  const handshake = await carrier.handshake();
  assert.is(handshake.node, 'v26.0.0');
  assert.is(carrier.state, 'ready');
  played.exit(0, null);
  assert.is(carrier.state, 'exited');
  assert.ok(carrier.exited);
  carrier.close();
  assert.is(carrier.state, 'ended');
  carrier.close();
  assert.is(carrier.state, 'ended', 'a second close is no move');
  assert.equal(events, ['exit 0 null']);
});

test('a carrier whose channel the host closes first ends when its process exits', async () => {
  const { carrier, played } = playedCarrier();
  hello(played);
  await carrier.handshake();
  await carrier.terminate(1000);
  assert.is(played.killed, 1);
  assert.is(carrier.state, 'closed', 'the process is killed, not yet reported gone');
  assert.not.ok(carrier.exited);
  played.exit(null, 'SIGKILL');
  assert.is(carrier.state, 'ended');
});

test('a carrier that exits before its handshake has the handshake rejected, and a late hello changes nothing', async () => {
  const { carrier, played, events } = playedCarrier();
  played.exit(1, null);
  assert.is(carrier.state, 'exited');
  await rejects(carrier.handshake(), /the carrier exited before its handshake/);
  hello(played);
  await turn();
  assert.is(carrier.state, 'exited');
  assert.equal(events, ['exit 1 null']);
});

test('a carrier that cannot start is exited, and says why', async () => {
  const { carrier, played, events } = playedCarrier();
  played.failToStart('could not start the carrier (nowhere): ENOENT');
  assert.is(carrier.state, 'exited');
  await rejects(carrier.handshake(), /ENOENT/);
  assert.equal(events, ['spawn: could not start the carrier (nowhere): ENOENT']);
});

test('a carrier with a handshake of another revision has its channel closed while its process lives', async () => {
  const { carrier, played, events } = playedCarrier();
  played.connection.control.write(`${JSON.stringify({ t: 'hello', revision: PROTOCOL_REVISION + 1, node: 'v26.0.0', capabilities: [], key: 'ab'.repeat(32) })}\n`);
  await rejects(carrier.handshake(), /does not match host revision/);
  assert.is(carrier.state, 'closed');
  assert.is(events.length, 1);
  assert.match(events[0]!, /^protocol: carrier protocol revision \d+ does not match host revision \d+/);
});

test('a connection that reports its carrier gone twice breaks its contract: the move is refused, the state kept', () => {
  const { carrier, played } = playedCarrier();
  played.exit(0, null);
  assert.throws(() => played.exit(0, null), (error: Error) => error.message === 'carrier: no move from "exited" to "exited"');
  assert.is(carrier.state, 'exited');
});

// Every pair of states the tables do not list is refused, naming both states.
const TABLES = [['carrier', CARRIER_MOVES], ['warm pool', POOL_MOVES]] as const;
for (const [name, moves] of TABLES) {
  test(`the ${name} table: listed moves are made, every other move is refused`, () => {
    const states = Object.keys(moves) as Array<CarrierState | PoolState>;
    for (const from of states) {
      for (const to of states) {
        const lifecycle = new Lifecycle<string>(name, from, moves as Record<string, readonly string[]>);
        if ((moves as Record<string, readonly string[]>)[from]!.includes(to)) {
          lifecycle.to(to);
          assert.is(lifecycle.state, to);
        } else {
          assert.throws(() => lifecycle.to(to), (error: Error) => error.message === `${name}: no move from "${from}" to "${to}"`);
          assert.is(lifecycle.state, from);
        }
      }
    }
  });
}

test('a pool whose carrier fails to boot starts no more until a run takes one; the run gets a new one', async () => {
  const started: Played[] = [];
  const recipe = {
    key: 'lifecycle-test',
    create: () => {
      const played = playedConnection();
      started.push(played);
      return new Carrier({ connection: played.connection, maxMessageBytes: 1 << 20 });
    },
  } as unknown as CarrierRecipe;
  const release = holdPool(recipe, { min: 2, max: 2 }, 0);
  const warm = warmPool(recipe);
  assert.is(started.length, 1, 'the first carrier boots as the pool is held');
  started[0]!.exit(1, null);
  await warm;
  for (let i = 0; i < 5; i++) await turn();
  assert.is(started.length, 1, 'failing: no carrier is started after the failed boot');
  const { carrier, warm: wasWarm } = takeCarrier(recipe);
  assert.not.ok(wasWarm);
  assert.is(started.length, 2, 'the run boots its own carrier');
  replenish(recipe);
  for (let i = 0; i < 5; i++) await turn();
  assert.ok(started.length > 2, 'open again: the pool refills');
  hello(started[2]!);
  await turn();
  const next = takeCarrier(recipe);
  assert.ok(next.warm, 'a booted carrier is taken warm');
  assert.is(next.carrier.state, 'ready');
  await release();
  next.carrier.close();
  carrier.close();
});

test.run();
