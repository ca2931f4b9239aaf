// What a finished run reports of its confinement: the network proxy's counts, and whether the
// program met a denial anywhere it shows.
import type { RunOutcome } from '../../../wire/messages.ts';
import { isDenial, type NetworkSession } from '../../sandbox/index.ts';
import type { Failure } from '../failures.ts';
import type { SandboxReport } from './outcome.ts';

/** Copies the allowlist proxy's report into the run's; read before a per-call carrier is terminated, which stops its proxy. */
export function reportNetwork(network: NetworkSession | undefined, sandbox: SandboxReport): void {
  if (network === undefined) return;
  sandbox.network = network.report();
  if (sandbox.network.denied.length > 0) sandbox.denied = true;
}

/**
 * A denial shows in what the run reports: its output (scanned as it arrived), the error it
 * failed with, or the value it returned (a program that caught the error and handed it back).
 * A path the carrier found outside the sandbox's view (outcome.hidden) is a denial whether or not
 * the host has it, as node-permission refuses such a path before anything looks for it: asking the
 * host would hand the program's author an oracle of which host paths exist.
 */
export function reportDenials(sandbox: SandboxReport, failure: Failure | undefined, outcome: RunOutcome | undefined): void {
  if ((outcome?.hidden?.length ?? 0) > 0) sandbox.denied = true;
  const reported = failure ?? (outcome?.status === 'exception' ? outcome.error : undefined);
  if (reported !== undefined && [reported.code, reported.message].some(isDenial)) sandbox.denied = true;
  if (outcome?.status === 'ok' && isDenial(outcome.value)) sandbox.denied = true;
  if (outcome?.denied === true) sandbox.denied = true;
}
