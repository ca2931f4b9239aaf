// A run's output as it arrives: charged to the ledger (maxOutputBytes; past it the run fails with
// output-limit), scanned for sandbox denials, and passed to the caller's onOutput.
import type { ImageDescriptor, OutputMessage } from '../../../wire/messages.ts';
import { protocolFailure } from '../failures.ts';
import type { OutputLedger, OutputStream } from '../output-ledger.ts';
import { isDenial } from '../../sandbox/index.ts';
import type { Execution } from './execution.ts';
import { outputLimitFailure, type SandboxReport } from './outcome.ts';
import type { RunState } from './state.ts';

export interface RunOutput {
  /** Text the program printed, or its processes wrote to stdout/stderr. */
  text(text: string, stream: OutputStream): void;
  /** An output message from the carrier: text, or an image registered earlier. */
  message(entry: OutputMessage): void;
}

/** The output side of one run. */
export function runOutput(execution: Execution, ledger: OutputLedger, sandbox: SandboxReport, state: RunState, images: ReadonlyMap<string, ImageDescriptor>): RunOutput {
  const limit = (): void => state.stop(outputLimitFailure(ledger.limit));
  // The caller's listener must not be able to break the run; its failure is its own.
  const emit: NonNullable<Execution['onOutput']> = (entry) => {
    try {
      execution.onOutput?.(entry);
    } catch {
      // Ignored: the entry is still in the result.
    }
  };
  const text = (text: string, stream: OutputStream): void => {
    if (!sandbox.denied && isDenial(text)) sandbox.denied = true;
    const kept = ledger.addText(text, stream);
    if (kept !== undefined) emit({ type: 'text', text: kept, stream });
    if (ledger.overflowed) limit();
  };
  return {
    text,
    message(entry) {
      if (state.settled) return;
      if (entry.type === 'text') return text(entry.text, entry.stream ?? 'stdout');
      const image = images.get(entry.attachmentId);
      if (image === undefined) return state.stop(protocolFailure(`invalid control message: unknown image attachment ${JSON.stringify(entry.attachmentId)}`));
      if (ledger.addImage(image)) emit({ type: 'image', ...image });
      else limit();
    },
  };
}
