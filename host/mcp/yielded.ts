// Runs that outlive their run_code call: with `yieldAfterMs`, run_code answers with the output so
// far and the run's id while the program goes on, and the `wait` tool looks again: the output
// since the last look, and once the run ends, its result. The runs are the session's; they end
// with it (the runtime aborts them at close).
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RunHandle, RunningLook } from '../index.ts';
import { outputContent, toolResult } from './results.ts';

/** run_code's `yieldAfterMs` argument, as the model reads it. */
export const YIELD_AFTER_ARGUMENT = {
  type: 'integer',
  minimum: 0,
  description: 'Answer after this many ms with the output so far if the program is still running (it keeps running; call wait for the rest). Omit it to wait for the end.',
} as const;

/** The `wait` tool, as the model reads it. */
export const WAIT_TOOL: Tool = {
  name: 'wait',
  description: 'Look again at a program that run_code left running (it answered "still running" with a runId): returns the output printed since the last look, and once the program has ended, its result. With cancel: true, stops it instead and returns how it ended.',
  inputSchema: {
    type: 'object',
    properties: {
      runId: { type: 'string', description: 'The runId run_code answered.' },
      timeoutMs: { type: 'integer', minimum: 0, description: 'Answer after this many ms if the program is still running; omit it to wait for the end (or the program\'s deadline).' },
      cancel: { type: 'boolean', description: 'Stop the program now.' },
    },
    required: ['runId'],
    additionalProperties: false,
  },
};

/** The session's runs that yielded, by id, each with what to do once it ends. */
export class YieldedRuns {
  readonly #runs = new Map<string, RunHandle>();

  /** Keeps a yielded run for `wait` until it ends; `ended` runs then (its files, its upstream calls). */
  keep(handle: RunHandle, ended: () => Promise<void>): void {
    this.#runs.set(handle.runId, handle);
    void handle.result.then(() => {}, () => {}).then(ended);
  }

  /** The `wait` tool: a look at a kept run, or a tool error naming what was wrong. */
  async wait(args: Record<string, unknown>): Promise<CallToolResult> {
    for (const key of Object.keys(args)) {
      if (key !== 'runId' && key !== 'timeoutMs' && key !== 'cancel') return refusal(`wait: unknown argument "${key}" (it takes runId, timeoutMs and cancel)`);
    }
    const { runId, timeoutMs, cancel } = args;
    if (typeof runId !== 'string') return refusal(`wait: runId must be the string run_code answered, got ${JSON.stringify(runId)}`);
    if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs < 0)) return refusal(`wait: timeoutMs must be a non-negative integer of ms, got ${JSON.stringify(timeoutMs)}`);
    if (cancel !== undefined && typeof cancel !== 'boolean') return refusal(`wait: cancel must be a boolean, got ${JSON.stringify(cancel)}`);
    const handle = this.#runs.get(runId);
    if (handle === undefined) return refusal(`wait: no program left running has runId ${JSON.stringify(runId)} (a run is forgotten once a look returned its result)`);
    if (cancel === true) await handle.cancel('cancelled by the wait tool');
    const look = await handle.wait(cancel === true ? 0 : timeoutMs);
    if (look.status === 'running') return runningResult(look);
    this.#runs.delete(runId);
    return toolResult(look);
  }
}

/** What run_code or wait answers for a program still running: its output since the last look, and how to look again. */
export async function runningResult(look: RunningLook): Promise<CallToolResult> {
  const content = await outputContent(look.output);
  content.push({ type: 'text', text: `(still running as runId ${JSON.stringify(look.runId)}: call wait with {"runId": ${JSON.stringify(look.runId)}} for the output since this look and, once it ends, its result)` });
  return { content, structuredContent: { status: 'running', runId: look.runId } };
}

function refusal(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}
