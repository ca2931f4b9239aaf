// The journal over `ptc serve` (a config with `journal`): `runs` and `calls` list it, and
// `resume` takes up a run that never finished, with the client's tools again.
import type { Runtime } from '../index.ts';
import { ErrorCode, RpcError } from './wire.ts';
import { show } from '../../wire/show.ts';
import { checkTools, type Tool } from './tools.ts';

const invalid = (method: string, message: string): RpcError => new RpcError(ErrorCode.invalidParams, `${method}: ${message}`);

function only(method: string, params: Record<string, unknown>, fields: string[]): void {
  for (const field of Object.keys(params)) {
    if (!fields.includes(field)) throw invalid(method, `unknown parameter "${field}" (value ${show(params[field])}); ${method} takes ${fields.length > 0 ? fields.join(', ') : 'no parameters'}`);
  }
}

function runIdOf(method: string, params: Record<string, unknown>): string {
  const { runId } = params;
  if (typeof runId !== 'string' || runId === '') throw invalid(method, `runId must be a non-empty string, got ${show(runId)}`);
  return runId;
}

/** Answers `runs` and `calls`; library errors (no journal, unknown run) become bad-params replies. */
export function listJournal(runtime: Runtime, method: 'runs' | 'calls', params: Record<string, unknown>): unknown {
  only(method, params, method === 'runs' ? [] : ['runId']);
  try {
    return method === 'runs' ? { runs: runtime.runs() } : { calls: runtime.calls(runIdOf(method, params)) };
  } catch (error) {
    if (error instanceof RpcError) throw error;
    throw invalid(method, (error as Error).message);
  }
}

export interface ResumeParams {
  runId: string;
  tools: Tool[];
  approval?: unknown;
  reconcile?: unknown;
  approveProgram?: unknown;
}

export function resumeParams(params: Record<string, unknown>): ResumeParams {
  only('resume', params, ['runId', 'tools', 'approval', 'reconcile', 'approveProgram']);
  const { approval, reconcile, approveProgram } = params;
  return {
    runId: runIdOf('resume', params),
    tools: checkTools(params.tools),
    ...(approval !== undefined ? { approval } : {}),
    ...(reconcile !== undefined ? { reconcile } : {}),
    ...(approveProgram !== undefined ? { approveProgram } : {}),
  };
}
