// Approvals over `ptc serve`: a run's `approval` names the tools whose calls wait for a person;
// each waiting call goes to the client as an `approval` notification, and the client decides
// with `approve` or `reject` (runId and sequence, and a scope: the call, the rest of the run, or
// the owner). With `approveProgram` the whole program is asked about first, as sequence 0. A
// call that stops waiting (timeout, run ended) is forgotten, and a late decision answers
// {decided: false}. A run's `reconcile` names the tools whose in-doubt calls the client settles.
import { binding, bindingPaths, type ApprovalHandler, type BindingFunction, type BindingOptions, type Bindings, type PendingAction, type PendingProgram, type ProgramApprovalHandler } from '../index.ts';
import { ErrorCode, RpcError } from './wire.ts';
import { show } from '../../wire/show.ts';

const invalid = (method: string, message: string): RpcError => new RpcError(ErrorCode.invalidParams, `${method}: ${message}`);

/** Checks `run`'s `approval` (or `reconcile`): a list of the run's tool names. */
export function approvalNames(value: unknown, toolNames: string[], field: 'approval' | 'reconcile' = 'approval'): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((name) => typeof name !== 'string')) throw invalid('run', `${field} must be a list of tool names, got ${show(value)}`);
  for (const name of value as string[]) {
    if (!toolNames.includes(name)) throw invalid('run', `${field} names ${JSON.stringify(name)}, which is not one of the run's tools`);
  }
  return value as string[];
}

/** Marks tools' bindings with their options (approval, reconcile); a tool without options stays as it is. */
export function markTools(bindings: Bindings, toolNames: string[], optionsOf: (name: string) => BindingOptions | undefined): Bindings {
  const paths = bindingPaths(toolNames);
  toolNames.forEach((name, index) => {
    const options = optionsOf(name);
    if (options === undefined) return;
    const path = paths[index]!;
    let node = bindings;
    for (const part of path.slice(0, -1)) node = node[part] as Bindings;
    const leaf = path.at(-1)!;
    node[leaf] = binding(node[leaf] as BindingFunction, options);
  });
  return bindings;
}

const SCOPES = ['call', 'run', 'owner'];

export class ServeApprovals {
  readonly #pending = new Map<string, PendingAction | PendingProgram>();

  /** The run's approval handler: each pending action is announced with `notify` and kept until it is decided. */
  handler(runId: string, tools: Map<string, string>, notify: (params: object) => void): ApprovalHandler {
    return (action) => {
      this.#keep(runId, action.sequence, action);
      // The tool's own name, as `invoke` names it, not the identifier path the program called.
      notify({ runId, sequence: action.sequence, kind: 'call', name: tools.get(action.binding) ?? action.binding, args: action.args });
    };
  }

  /** The run's program approval handler: the program is announced as sequence 0, with the tools it can reach. */
  programHandler(runId: string, tools: Map<string, string>, notify: (params: object) => void): ProgramApprovalHandler {
    return (action) => {
      this.#keep(runId, 0, action);
      notify({ runId, sequence: 0, kind: 'program', program: action.program, names: action.bindings.map((path) => tools.get(path) ?? path) });
    };
  }

  #keep(runId: string, sequence: number, action: PendingAction | PendingProgram): void {
    const key = keyOf(runId, sequence);
    this.#pending.set(key, action);
    void action.outcome.then(() => this.#pending.delete(key));
  }

  decide(method: 'approve' | 'reject', params: Record<string, unknown>): { decided: boolean } {
    const fields = method === 'reject' ? ['runId', 'sequence', 'reason', 'scope'] : ['runId', 'sequence', 'scope'];
    for (const field of Object.keys(params)) {
      if (!fields.includes(field)) throw invalid(method, `unknown parameter "${field}" (value ${show(params[field])}); ${method} takes ${fields.join(', ')}`);
    }
    const { runId, sequence, reason, scope } = params;
    if (typeof runId !== 'string' || runId === '') throw invalid(method, `runId must be a non-empty string, got ${show(runId)}`);
    if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 0) throw invalid(method, `sequence must be a non-negative integer (0 is the program), got ${show(sequence)}`);
    if (reason !== undefined && typeof reason !== 'string') throw invalid(method, `reason must be a string, got ${show(reason)}`);
    if (scope !== undefined && !SCOPES.includes(scope as string)) throw invalid(method, `scope must be "call", "run" or "owner", got ${show(scope)}`);
    const action = this.#pending.get(keyOf(runId, sequence));
    if (action === undefined) return { decided: false };
    const options = scope !== undefined ? { scope: scope as 'call' | 'run' | 'owner' } : {};
    // A program's answer covers its run; a scope given with it changes nothing.
    if ('binding' in action) return { decided: method === 'approve' ? action.approve(options) : action.reject(reason as string | undefined, options) };
    return { decided: method === 'approve' ? action.approve() : action.reject(reason as string | undefined) };
  }
}

function keyOf(runId: string, sequence: number): string {
  return `${runId}\u0000${sequence}`;
}
