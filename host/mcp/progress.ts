// A run's output as MCP progress: when the client's tools/call carried a progressToken, each
// output entry is sent as it happens, as `notifications/progress` with the entry's text as the
// message, so a client can show a long program's output before its result.
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { OutputEntry } from '../index.ts';

/** The runtime's onOutput for one tools/call, or undefined when the client asked for no progress. */
export function progressReporter(extra: RequestHandlerExtra<ServerRequest, ServerNotification>): ((entry: OutputEntry) => void) | undefined {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return undefined;
  // Progress must increase with each notification (MCP's progress utility): it counts entries.
  let progress = 0;
  return (entry) => {
    const message = entry.type === 'text' ? entry.text : `[image ${entry.width}x${entry.height}]`;
    progress += 1;
    // A client gone away must not fail the run; its result is moot then anyway.
    extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => {});
  };
}
