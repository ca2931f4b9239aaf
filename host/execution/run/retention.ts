// Whether the environment a run used serves another: a temporary one never does, a retained one
// keeps its state through a timeout or an abort the carrier stopped cooperatively, and loses it
// (ended, `state: 'cleared'`) on anything else.
import type { RunOutcome } from '../../../wire/messages.ts';
import type { Carrier } from '../../worker/carrier.ts';
import type { RunResult } from './outcome.ts';
import type { RunState } from './state.ts';

/** The part of an environment this step decides about. */
export interface RunEnvironment {
  readonly carrier: Carrier;
  readonly retained: boolean;
  readonly lost: string | undefined;
  terminate(afterResult?: boolean): Promise<void>;
}

/** After a failed run of a retained environment: whether its state survived (failure.state says which). */
export async function survivesFailure(env: RunEnvironment, state: RunState, running: Promise<void>, stopGraceMs: number): Promise<boolean> {
  const failure = state.failure;
  if (failure === undefined || !env.retained) return env.retained;
  // A CPU overrun has killed the tree already (see ResourceWatch).
  const stoppable = ((failure.kind === 'timeout' && failure.cpuTimeMs === undefined) || failure.kind === 'abort') && state.codeStarted && !state.initializing;
  const preserved = stoppable && env.lost === undefined && (await revoke(env, running, stopGraceMs));
  failure.state = preserved ? 'preserved' : 'cleared';
  // Interrupts end synchronous loops (carrier/run/interrupt.ts); what outlasts the grace is a call
  // V8 cannot interrupt, or a carrier that cannot be interrupted (node-permission, a relay).
  if (stoppable && !preserved && env.lost === undefined) failure.message += `; it did not stop within stopGraceMs (${stopGraceMs} ms), so its process was ended: a blocking call (a read that never returns) cannot be interrupted, and under node-permission, on a remote carrier or on a Node before 26 no synchronous code can`;
  return preserved;
}

/** Ends the environment unless it serves another run; returns whether it does. */
export async function endUnlessUsable(env: RunEnvironment, usable: boolean, state: RunState, outcome: RunOutcome | undefined): Promise<boolean> {
  if (usable && !(outcome?.status === 'exception' && outcome.initializer)) return true;
  // A temporary run that completed needs nothing more from its process: what it and its
  // children wrote before the completion was taken from the pipes with it, and the carrier
  // halted when it replied. The kill goes out once the caller has the result; it, the wait for
  // the exit, the pipes and the cleanup stay off the result's path, and dispose() waits for
  // them. Any other end waits here: its exit status may be the diagnostic.
  if (!env.retained && state.failure === undefined) void env.terminate(true);
  else await env.terminate();
  return false;
}

/** A retained run whose completion did not fit the output budget leaves no state behind it. */
export async function endAfterOutputLimit(env: RunEnvironment, result: RunResult): Promise<boolean> {
  if (result.status !== 'failed' || result.failure.kind !== 'output-limit' || !env.retained) return true;
  result.failure.state = 'cleared';
  await env.terminate();
  return false;
}

/** Asks the carrier to stop the run; true when it acknowledged within stopGraceMs. */
async function revoke(env: RunEnvironment, running: Promise<void>, stopGraceMs: number): Promise<boolean> {
  env.carrier.revoke();
  let timer: NodeJS.Timeout | undefined;
  const acknowledged = await Promise.race([
    running.then(() => true, () => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), stopGraceMs);
    }),
  ]);
  clearTimeout(timer);
  return acknowledged && env.lost === undefined;
}
