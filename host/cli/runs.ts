// `ptc runs`, `ptc resume` and `ptc revert`: the journal from the command line. `runs` lists
// every run or one run's calls; `resume` takes up a run that never finished; `revert` rolls back
// a run's applied calls. Each opens an existing journal only: a typo must not create an empty one.
import type { Argv } from 'yargs';
import { createRuntime, jsonText, type CallRecord, type RevertRecord, type RunRecord, type Runtime } from '../index.ts';
import { loadBindings, messageOf, UsageError } from './options.ts';
import { HumanPrinter, resultJson } from './print.ts';
import { colorEnabled } from './color.ts';
import { TerminalText } from './terminal-text.ts';

export interface RunsArgs {
  journal: string;
  run?: string;
  json: boolean;
}

export interface JournalActionArgs {
  journal: string;
  run: string;
  bindings?: string;
  json: boolean;
}

const JOURNAL_OPTION = { type: 'string', demandOption: true, requiresArg: true, describe: 'The journal file a journaled run wrote (config.journal)' } as const;

export function runsOptions(command: Argv): Argv {
  return command
    .positional('run', { type: 'string', describe: 'A runId: list its calls instead of the runs' })
    .option('journal', JOURNAL_OPTION)
    .option('json', { type: 'boolean', default: false, describe: 'Print JSON: an array of runs, or of one run\'s calls' });
}

export function resumeOptions(command: Argv): Argv {
  return command
    .positional('run', { type: 'string', describe: 'The runId of a run that never finished (ptc runs lists them)' })
    .option('journal', JOURNAL_OPTION)
    .option('bindings', { type: 'string', describe: 'Module whose exported functions answer the calls the journal has no answer for (functions are not journaled)' })
    .option('json', { type: 'boolean', default: false, describe: 'Print exactly one lossless JSON result on stdout' });
}

export function revertOptions(command: Argv): Argv {
  return command
    .positional('run', { type: 'string', describe: 'The runId whose applied calls to roll back, newest first' })
    .option('journal', JOURNAL_OPTION)
    .option('bindings', { type: 'string', describe: 'Module whose bindings carry the revert functions (binding(fn, { revert }))' })
    .option('json', { type: 'boolean', default: false, describe: 'Print JSON: an array of { sequence, binding, reverted, reason? }' });
}

/** Lists the journal's runs, or one run's calls; exit code 0. */
export async function runsCommand(args: RunsArgs): Promise<number> {
  return withJournal(args.journal, async (runtime) => {
    const listed: RunRecord[] | CallRecord[] = library(() => (args.run === undefined ? runtime.runs() : runtime.calls(args.run)));
    if (args.json) process.stdout.write(`${jsonText(listed)}\n`);
    else {
      // Programs, arguments and error messages are the programs' text: on a terminal, controls show.
      const shown = new TerminalText(process.stdout.isTTY !== true);
      process.stdout.write(shown.whole(args.run === undefined ? (listed as RunRecord[]).map(runLine).join('') : (listed as CallRecord[]).map(callLine).join('')));
    }
    return 0;
  });
}

/** Resumes a run that never finished and prints its result as `ptc run` does; exit code 0 or 1. */
export async function resumeCommand(args: JournalActionArgs): Promise<number> {
  return withJournal(args.journal, async (runtime) => {
    const bindings = args.bindings === undefined ? {} : await loadBindings(args.bindings);
    const printer = new HumanPrinter(process.stdout, process.stderr, colorEnabled(process.stdout));
    const controller = new AbortController();
    const interrupt = (): void => controller.abort(new Error('interrupted'));
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    try {
      // resume() refuses an unknown or finished run by throwing, before anything runs: a usage error.
      const result = await runtime.resume(args.run, { bindings, signal: controller.signal, ...(args.json ? {} : { onOutput: printer.entry }) }).catch((error: unknown) => {
        throw new UsageError(messageOf(error), { cause: error });
      });
      if (args.json) process.stdout.write(`${resultJson(result)}\n`);
      else printer.outcome(result);
      return result.status === 'ok' ? 0 : 1;
    } finally {
      process.off('SIGINT', interrupt);
      process.off('SIGTERM', interrupt);
    }
  });
}

/** Rolls back a run's applied calls and prints one line per call; exit code 1 when a revert threw. */
export async function revertCommand(args: JournalActionArgs): Promise<number> {
  return withJournal(args.journal, async (runtime) => {
    const bindings = args.bindings === undefined ? {} : await loadBindings(args.bindings);
    const records = await runtime.revert(args.run, { bindings }).catch((error: unknown) => {
      throw new UsageError(messageOf(error), { cause: error });
    });
    if (args.json) process.stdout.write(`${jsonText(records)}\n`);
    else process.stdout.write(new TerminalText(process.stdout.isTTY !== true).whole(records.map(revertLine).join('')));
    return records.some((record) => record.reason?.startsWith('its revert threw') === true) ? 1 : 0;
  });
}

// The runtime over an existing journal, disposed when `use` settles.
async function withJournal(journal: string, use: (runtime: Runtime) => Promise<number>): Promise<number> {
  const { stat } = await import('node:fs/promises');
  const info = await stat(journal).catch(() => undefined);
  if (info === undefined) throw new UsageError(`--journal ${JSON.stringify(journal)}: no such file (a journal is made by a run with config.journal)`);
  if (!info.isFile()) throw new UsageError(`--journal ${JSON.stringify(journal)}: not a file`);
  let runtime: Runtime;
  try {
    runtime = createRuntime({ journal, prestartCarrier: false });
  } catch (error) {
    throw new UsageError(messageOf(error), { cause: error });
  }
  try {
    return await use(runtime);
  } finally {
    await runtime.dispose();
  }
}

// What the library refuses (an unknown run, a row that does not verify) is the user's input: exit 2.
function library<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new UsageError(messageOf(error), { cause: error });
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

function revertLine(record: RevertRecord): string {
  return `#${record.sequence}  ${record.binding}  ${record.reverted ? 'reverted' : `not reverted: ${record.reason ?? 'no reason given'}`}\n`;
}
