// The parameters of each method, checked before anything starts. Errors name the method, the
// field and the value, and an unknown field is refused so a typo never falls back to a default.
import type { PolicyChange, RuntimeConfig, SandboxPolicy } from '../index.ts';
import { ErrorCode, RpcError } from './wire.ts';
import { show } from '../../wire/show.ts';
import { checkTools, type Tool } from './tools.ts';

export interface RunParams {
  program: string;
  tools: Tool[];
  owner?: string;
  runId?: string;
  timeoutMs?: number | null;
  cpuTimeMs?: number | null;
  policy?: SandboxPolicy;
  cwd?: string;
  discardCompletion?: boolean;
  onPolicyChange?: PolicyChange;
  /** Tool names whose calls wait for approval (checked against the tools in approvals.ts). */
  approval?: unknown;
  /** Tool names whose in-doubt calls after a crash the client reconciles (a `reconcile` request). */
  reconcile?: unknown;
  /** Ask for one approval of the whole program before it runs. */
  approveProgram?: unknown;
  /** The caller's W3C trace context: the run's span joins that trace (docs/traces.md); the library checks its form. */
  traceparent?: string;
  tracestate?: string;
  /** Answer a `running` look after this many ms if the run has not ended; `wait` looks again. */
  yieldAfterMs?: number;
}

const invalid = (method: string, message: string): RpcError => new RpcError(ErrorCode.invalidParams, `${method}: ${message}`);

function only(method: string, params: Record<string, unknown>, fields: string[]): void {
  for (const field of Object.keys(params)) {
    if (!fields.includes(field)) throw invalid(method, `unknown parameter "${field}" (value ${show(params[field])}); ${fields.length > 0 ? `${method} takes ${fields.join(', ')}` : `${method} takes no parameters`}`);
  }
}

function name(method: string, params: Record<string, unknown>, field: string, required: boolean): string | undefined {
  const value = params[field];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '') throw invalid(method, `${field} must be a non-empty string, got ${show(value)}`);
  return value;
}

export function initializeParams(params: Record<string, unknown>): { protocolVersion?: number; config?: RuntimeConfig } {
  only('initialize', params, ['protocolVersion', 'config', 'clientInfo']);
  const { protocolVersion, config } = params;
  if (protocolVersion !== undefined && (typeof protocolVersion !== 'number' || !Number.isInteger(protocolVersion))) throw invalid('initialize', `protocolVersion must be an integer, got ${show(protocolVersion)}`);
  if (config !== undefined && (typeof config !== 'object' || config === null || Array.isArray(config))) throw invalid('initialize', `config must be an object of runtime configuration, got ${show(config)}`);
  return { ...(protocolVersion !== undefined ? { protocolVersion } : {}), ...(config !== undefined ? { config: config as RuntimeConfig } : {}) };
}

/** Checks `run`; the library checks the values it owns (timeoutMs, cpuTimeMs, policy, cwd, onPolicyChange) when it resolves them. */
export function runParams(params: Record<string, unknown>): RunParams {
  only('run', params, ['program', 'tools', 'owner', 'runId', 'timeoutMs', 'cpuTimeMs', 'policy', 'cwd', 'discardCompletion', 'onPolicyChange', 'approval', 'reconcile', 'approveProgram', 'traceparent', 'tracestate', 'yieldAfterMs']);
  if (params.yieldAfterMs !== undefined) lookMs('run', 'yieldAfterMs', params.yieldAfterMs);
  if (typeof params.program !== 'string') throw invalid('run', `program must be a string, got ${show(params.program)}`);
  const owner = name('run', params, 'owner', false);
  const runId = name('run', params, 'runId', false);
  return {
    ...(params as Omit<RunParams, 'tools' | 'owner' | 'runId'>),
    tools: checkTools(params.tools),
    ...(owner !== undefined ? { owner } : {}),
    ...(runId !== undefined ? { runId } : {}),
  };
}

/** Checks `wait`: the run's id and an optional timeoutMs. */
export function waitParams(params: Record<string, unknown>): { runId: string; timeoutMs?: number } {
  only('wait', params, ['runId', 'timeoutMs']);
  const runId = name('wait', params, 'runId', true)!;
  if (params.timeoutMs === undefined || params.timeoutMs === null) return { runId };
  return { runId, timeoutMs: lookMs('wait', 'timeoutMs', params.timeoutMs) };
}

function lookMs(method: string, field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(method, `${field} must be a non-negative integer of milliseconds, got ${show(value)}`);
  return value;
}

export function cancelParams(params: Record<string, unknown>): string {
  only('cancel', params, ['runId']);
  return name('cancel', params, 'runId', true)!;
}

export function releaseParams(params: Record<string, unknown>): string {
  only('release', params, ['owner']);
  return name('release', params, 'owner', true)!;
}

/** Checks `declarations`: the same tool list as `run` takes, and a budget of characters. */
export function declarationsParams(params: Record<string, unknown>): { tools: Tool[]; budget?: number } {
  only('declarations', params, ['tools', 'budget']);
  if (params.tools === undefined) throw invalid('declarations', 'tools is required: [{name, description?, inputSchema?, outputSchema?}]');
  const { budget } = params;
  if (budget !== undefined && (typeof budget !== 'number' || !Number.isSafeInteger(budget) || budget <= 0)) throw invalid('declarations', `budget must be a positive integer of characters, got ${show(budget)}`);
  return { tools: checkTools(params.tools), ...(budget !== undefined ? { budget } : {}) };
}

export function noParams(method: string, params: Record<string, unknown>): void {
  only(method, params, []);
}
