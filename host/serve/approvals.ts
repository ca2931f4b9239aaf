// Approvals over `ptc serve`: a run's `approval` names the tools whose calls wait for a person;
// each waiting call goes to the client as an `approval` notification, and the client decides
// with `approve` or `reject` (runId and sequence). A call that stops waiting (timeout, run ended)
// is forgotten, and a late decision answers {decided: false}.
import { binding, bindingPaths, type ApprovalHandler, type BindingFunction, type Bindings, type PendingAction } from '../index.ts';
import { ErrorCode, RpcError } from './wire.ts';
import { show } from '../../wire/show.ts';

const invalid = (method: string, message: string): RpcError => new RpcError(ErrorCode.invalidParams, `${method}: ${message}`);

/** Checks `run`'s `approval`: a list of the run's tool names. */
export function approvalNames(value: unknown, toolNames: string[]): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((name) => typeof name !== 'string')) throw invalid('run', `approval must be a list of tool names, got ${show(value)}`);
  for (const name of value as string[]) {
    if (!toolNames.includes(name)) throw invalid('run', `approval names ${JSON.stringify(name)}, which is not one of the run's tools`);
  }
  return value as string[];
}

/** Marks the named tools' bindings as needing approval. */
export function gateTools(bindings: Bindings, toolNames: string[], gated: string[]): Bindings {
  const paths = bindingPaths(toolNames);
  toolNames.forEach((name, index) => {
    if (!gated.includes(name)) return;
    const path = paths[index]!;
    let node = bindings;
    for (const part of path.slice(0, -1)) node = node[part] as Bindings;
    const leaf = path.at(-1)!;
    node[leaf] = binding(node[leaf] as BindingFunction, { approval: true });
  });
  return bindings;
}

export class ServeApprovals {
  readonly #pending = new Map<string, PendingAction>();

  /** The run's approval handler: each pending action is announced with `notify` and kept until it is decided. */
  handler(runId: string, tools: Map<string, string>, notify: (params: object) => void): ApprovalHandler {
    return (action) => {
      const key = keyOf(runId, action.sequence);
      this.#pending.set(key, action);
      void action.outcome.then(() => this.#pending.delete(key));
      // The tool's own name, as `invoke` names it, not the identifier path the program called.
      notify({ runId, sequence: action.sequence, name: tools.get(action.binding) ?? action.binding, args: action.args });
    };
  }

  decide(method: 'approve' | 'reject', params: Record<string, unknown>): { decided: boolean } {
    for (const field of Object.keys(params)) {
      if (field !== 'runId' && field !== 'sequence' && !(method === 'reject' && field === 'reason')) {
        throw invalid(method, `unknown parameter "${field}" (value ${show(params[field])}); ${method} takes runId, sequence${method === 'reject' ? ', reason' : ''}`);
      }
    }
    const { runId, sequence, reason } = params;
    if (typeof runId !== 'string' || runId === '') throw invalid(method, `runId must be a non-empty string, got ${show(runId)}`);
    if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 1) throw invalid(method, `sequence must be a positive integer, got ${show(sequence)}`);
    if (reason !== undefined && typeof reason !== 'string') throw invalid(method, `reason must be a string, got ${show(reason)}`);
    const action = this.#pending.get(keyOf(runId, sequence));
    if (action === undefined) return { decided: false };
    return { decided: method === 'approve' ? action.approve() : action.reject(reason as string | undefined) };
  }
}

function keyOf(runId: string, sequence: number): string {
  return `${runId}\u0000${sequence}`;
}
