// A run's output as MCP progress: when the client's tools/call carried a progressToken, each
// output entry is sent as it happens, as `notifications/progress` with the entry's text as the
// message, so a client can show a long program's output before its result.
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { OutputEntry } from '../index.ts';

/** What reports one tools/call's output as progress: the runtime's onOutput, and a promise of every notification it sent being written. */
export interface ProgressReporter {
  onOutput: (entry: OutputEntry) => void;
  /** Settles once each notification sent so far has gone to the transport: the result goes after them, or the client, which forgets the token at the result, would drop the last ones. */
  sent(): Promise<void>;
}

/** The progress reporter of one tools/call, or undefined when the client asked for no progress. */
export function progressReporter(extra: RequestHandlerExtra<ServerRequest, ServerNotification>): ProgressReporter | undefined {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return undefined;
  // Progress must increase with each notification (MCP's progress utility): it counts entries.
  let progress = 0;
  let last: Promise<void> = Promise.resolve();
  return {
    onOutput: (entry) => {
      const message = entry.type === 'text' ? entry.text : `[image ${entry.width}x${entry.height}]`;
      progress += 1;
      // A client gone away must not fail the run; its result is moot then anyway.
      const sending = extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => {});
      last = last.then(() => sending);
    },
    sent: () => last,
  };
}
