// Approvals in `ptc mcp`: which upstream tools wait for a person, and how the person is asked.
// By default a tool whose annotations say `destructiveHint: true` is gated; the config's
// "approval" object sets a rule per upstream ("destructive", "all", "none", or a list of tool
// names). The person is asked through MCP elicitation (elicitation/create) when the client
// declared that capability; otherwise the call is refused with a message that says why. The
// question's optional "forRun" answer approves the tool's later calls in the same run too.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ApprovalHandler } from '../index.ts';

export type ApprovalRule = 'destructive' | 'all' | 'none' | string[];

const quote = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** Checks the config's "approval": upstream names to rules; throws a message naming the field. */
export function parseApprovalRules(value: unknown, field: string, upstreams: string[]): Map<string, ApprovalRule> {
  const rules = new Map<string, ApprovalRule>();
  if (value === undefined) return rules;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${field} must be an object of upstream names to "destructive", "all", "none" or a list of tool names, got ${quote(value)}`);
  for (const [name, rule] of Object.entries(value)) {
    if (!upstreams.includes(name)) throw new Error(`${field}.${name} names no server of mcpServers (${upstreams.map(quote).join(', ')})`);
    const valid = rule === 'destructive' || rule === 'all' || rule === 'none' || (Array.isArray(rule) && rule.every((tool) => typeof tool === 'string'));
    if (!valid) throw new Error(`${field}.${name} must be "destructive", "all", "none" or a list of tool names, got ${quote(rule)}`);
    rules.set(name, rule as ApprovalRule);
  }
  return rules;
}

/** Whether calls of this upstream tool wait for approval. */
export function isGatedTool(rules: Map<string, ApprovalRule> | undefined, upstream: string, tool: Tool): boolean {
  const rule = rules?.get(upstream) ?? 'destructive';
  if (rule === 'all') return true;
  if (rule === 'none') return false;
  if (rule === 'destructive') return tool.annotations?.destructiveHint === true;
  return rule.includes(tool.name);
}

/** Asks the MCP client's user about each gated call, through elicitation/create. */
export function elicitingApprover(server: Server, toolOf: (binding: string) => string, timeoutMs: number): ApprovalHandler {
  return async (action) => {
    const tool = toolOf(action.binding);
    if (server.getClientCapabilities()?.elicitation === undefined) {
      return {
        approved: false,
        reason: `${tool} needs a person's approval, and this MCP client offers no way to ask one (MCP elicitation); the call was not made`,
      };
    }
    const withdrawn = new AbortController();
    void action.outcome.then(() => withdrawn.abort());
    try {
      const answer = await server.elicitInput(
        {
          message: `The program wants to call ${tool} with ${JSON.stringify(action.args[0] ?? {})}. Allow it?`,
          requestedSchema: {
            type: 'object',
            properties: {
              approve: { type: 'boolean', title: `Allow ${tool}`, description: 'Run this call' },
              forRun: { type: 'boolean', title: `Allow ${tool} for the rest of this program`, description: 'Its later calls in this run go ahead without asking' },
            },
            required: ['approve'],
          },
        },
        { signal: withdrawn.signal, timeout: timeoutMs },
      );
      if (answer.action === 'accept' && answer.content?.approve === true) return { approved: true, scope: answer.content.forRun === true ? 'run' : 'call' };
      return { approved: false, reason: answer.action === 'accept' ? 'not allowed by the user' : answer.action === 'decline' ? 'declined by the user' : 'the user cancelled the question' };
    } catch (error) {
      if (withdrawn.signal.aborted) return undefined;
      return { approved: false, reason: `the MCP client could not be asked: ${(error as Error).message}` };
    }
  };
}
