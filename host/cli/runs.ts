// `ptc runs`: the journal's audit trail from the command line: every run, or one run's calls.
import type { Argv } from 'yargs';
import { createRuntime, jsonText, type CallRecord, type RunRecord } from '../index.ts';
import { messageOf, UsageError } from './options.ts';
import { TerminalText } from './terminal-text.ts';

export interface RunsArgs {
  journal: string;
  run?: string;
  json: boolean;
}

export function runsOptions(command: Argv): Argv {
  return command
    .positional('run', { type: 'string', describe: 'A runId: list its calls instead of the runs' })
    .option('journal', { type: 'string', demandOption: true, describe: 'The journal file (config.journal)' })
    .option('json', { type: 'boolean', default: false, describe: 'Print JSON: an array of runs, or of one run\'s calls' });
}

export async function runsCommand(args: RunsArgs): Promise<number> {
  let runtime;
  try {
    runtime = createRuntime({ journal: args.journal, prestartCarrier: false });
  } catch (error) {
    throw new UsageError(messageOf(error), { cause: error });
  }
  try {
    let listed: RunRecord[] | CallRecord[];
    try {
      listed = args.run === undefined ? runtime.runs() : runtime.calls(args.run);
    } catch (error) {
      throw new UsageError(messageOf(error), { cause: error });
    }
    if (args.json) process.stdout.write(`${jsonText(listed)}\n`);
    else {
      // Programs, arguments and error messages are the programs' text: on a terminal, controls show.
      const shown = new TerminalText(process.stdout.isTTY !== true);
      process.stdout.write(shown.whole(args.run === undefined ? (listed as RunRecord[]).map(runLine).join('') : (listed as CallRecord[]).map(callLine).join('')));
    }
    return 0;
  } finally {
    await runtime.dispose();
  }
}

function runLine(run: RunRecord): string {
  const firstLine = run.program.trim().split('\n')[0]!;
  return `${run.runId}  ${run.status.padEnd(7)}  ${new Date(run.createdAt).toISOString()}  attempts ${run.attempts}  ${firstLine.length > 60 ? `${firstLine.slice(0, 60)}…` : firstLine}\n`;
}

function callLine(call: CallRecord): string {
  const args = (jsonText(call.args) ?? '[]').slice(1, -1);
  const answer = call.error !== undefined ? `threw ${call.error.code ?? 'Error'}: ${call.error.message}` : call.value !== undefined ? `→ ${jsonText(call.value)}` : '';
  return `#${call.sequence}  ${call.binding}(${args})  ${call.state}${answer === '' ? '' : `  ${answer}`}${decisionText(call)}\n`;
}

/** How the call's approval was decided (and what covered it), and what reconcile answered for it. */
function decisionText(call: CallRecord): string {
  const parts: string[] = [];
  const approval = call.approval;
  if (approval !== undefined) {
    const by = approval.by === 'rule' ? `rule ${approval.rule}`
      : approval.by === 'earlier-answer' ? `the ${approval.scope} answer at call ${approval.sequence}${approval.scope === 'owner' ? ` of run ${approval.runId}` : ''}`
      : approval.by === 'person' ? `a person${approval.scope === 'call' ? '' : ` (for the ${approval.scope})`}`
      : approval.by === 'timeout' ? 'the approval timeout' : 'nobody (the run had no approval handler)';
    parts.push(`${approval.decision} by ${by}`);
  }
  if (call.reconciled !== undefined) parts.push(`reconciled: ${call.reconciled}`);
  if (call.attempt !== undefined && call.attempt > 1) parts.push(`attempt ${call.attempt}`);
  return parts.length === 0 ? '' : `  [${parts.join('; ')}]`;
}
