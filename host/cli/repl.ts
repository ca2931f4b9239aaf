// `ptc repl`: an interactive session on one retained environment. Lines are read with
// node:readline and buffered until they parse; each submission is one run for the session's
// owner, its output printed as it arrives and its value or failure after it. Ctrl-C aborts the
// run in progress (the carrier keeps the variables when it acknowledges the stop) or, at the
// prompt, discards the input. Without a terminal the session reads stdin to its end, so
// `printf 'let a = 1\na + 1\n' | ptc repl` prints 2. On a terminal, what a program chose (its
// output, values, failures) is shown with its control characters visible (terminal-text.ts).
import { createInterface } from 'node:readline';
import { inspect } from 'node:util';
import type { Argv } from 'yargs';
import { createRuntime, type Bindings, type Failure, type OutputEntry, type Runtime, type RunResult, type RuntimeConfig } from '../index.ts';
import { asObjectLiteral, isIncomplete } from './repl-input.ts';
import { limitOptions, loadBindings, loadConfig, messageOf, numberFlag, sandboxOptions, UsageError } from './options.ts';
import { imageLine } from './print.ts';
import { TerminalText } from './terminal-text.ts';
import { colorEnabled } from './color.ts';

const PROMPT = 'ptc> ';
const CONTINUATION = '...> ';
const HELP = `.exit     leave the session (also Ctrl-D, or Ctrl-C twice at an empty prompt)
.help     show these commands
Ctrl-C    interrupt the running program; at the prompt, discard the current input
Input continues on "...> " lines until it parses; an empty line submits it as it is.
`;

type ReplMode = 'persistent-in-memory' | 'vm-script';

export interface ReplArgs {
  mode: ReplMode;
  'repl-node': boolean;
  bindings?: string;
  config?: string;
  cwd?: string;
  node?: string;
  bootstrap?: string;
  [flag: string]: unknown;
}

/** The options of `ptc repl`: those of `ptc run` that shape bindings, confinement, limits and launch, plus the retained mode. */
export function replOptions(command: Argv): Argv {
  command
    .option('mode', {
      type: 'string',
      choices: ['persistent-in-memory', 'vm-script'],
      default: 'persistent-in-memory',
      describe: 'Retained mode: REPL statements, or Scripts sharing one context',
    })
    .option('repl-node', { type: 'boolean', default: false, describe: "Use Node's REPL evaluator instead of the scoped REPL" })
    .option('bindings', { type: 'string', describe: 'Module whose exported functions (and objects of functions) become bindings' })
    .option('config', { type: 'string', describe: 'JSON file with runtime configuration' })
    .option('cwd', { type: 'string', describe: 'Working directory of the programs' })
    .option('node', { type: 'string', describe: 'Run the carrier with this Node executable (node-script launch)' })
    .option('bootstrap', { type: 'string', describe: 'Bootstrap file for --node (default: bootstrap.mjs next to ptc)' });
  sandboxOptions(command);
  return limitOptions(command, (flag, field) => (flag === 'timeout-ms' ? 'Deadline of each submission (default: none; Ctrl-C interrupts)' : `Overrides config ${field}`));
}

/** Runs `ptc repl` on stdin and stdout; resolves with the exit code once the user leaves. */
export async function replCommand(args: ReplArgs): Promise<number> {
  if (args['repl-node'] && args.mode !== 'persistent-in-memory') throw new UsageError(`--repl-node needs --mode persistent-in-memory, got --mode ${args.mode}`);
  // loadConfig reads the flags both commands share (--config, limits, confinement, launch); the rest are run's.
  const config = retainedConfig(await loadConfig({ ...args, json: false, 'discard-completion': false }), args.mode, args['repl-node']);
  const bindings = args.bindings === undefined ? undefined : await loadBindings(args.bindings);
  const request = {
    ...(bindings ? { bindings } : {}),
    ...(args.cwd !== undefined ? { cwd: args.cwd } : {}),
    timeoutMs: numberFlag(args, 'timeout-ms') ?? null,
  };
  let runtime: Runtime | undefined;
  try {
    runtime = createRuntime(config);
    // Bad bindings or a bad deadline are usage errors, found before the first prompt.
    runtime.resolve({ program: '', ...request });
  } catch (error) {
    await runtime?.dispose();
    throw new UsageError((error as Error).message);
  }
  try {
    const { failures } = await runSession(runtime, request, process.stdin, process.stdout);
    // A script piped in fails like a script: any failed submission makes the exit code 1.
    return process.stdin.isTTY !== true && failures > 0 ? 1 : 0;
  } finally {
    await runtime.dispose();
  }
}

/** The configuration with the session's retained mode; the mode fields of --config give way to the flags. */
export function retainedConfig(base: RuntimeConfig, mode: ReplMode, replNode: boolean): RuntimeConfig {
  return mode === 'vm-script'
    ? { ...base, executionMode: 'vm-script', scriptPersistence: true, replScoped: false }
    : { ...base, executionMode: 'persistent-in-memory', scriptPersistence: false, replScoped: !replNode };
}

interface SessionRequest {
  bindings?: Bindings;
  cwd?: string;
  timeoutMs: number | null;
}

type Input = NodeJS.ReadableStream & { isTTY?: boolean };
type Output = NodeJS.WritableStream & { isTTY?: boolean };

/** Reads, runs and prints submissions until .exit, Ctrl-D, Ctrl-C twice at an empty prompt, or the end of input; then releases the environment. Resolves with how many submissions failed. */
export function runSession(runtime: Runtime, request: SessionRequest, input: Input, output: Output): Promise<{ failures: number }> {
  const owner = {};
  const terminal = input.isTTY === true;
  const colors = colorEnabled(output);
  const shown = new TerminalText(output.isTTY !== true);
  const programText = (text: string, keepColors?: boolean): string => shown.whole(text, keepColors);
  const rl = createInterface({ input, output, terminal, prompt: PROMPT });
  const queue: string[] = [];
  let buffer: string[] = [];
  let submissions = 0;
  let failures = 0;
  let running: AbortController | undefined;
  let pumping = false;
  let closed = false;
  let leaving = false;
  let interruptedOnce = false;
  let atLineStart = true;
  let finish!: (summary: { failures: number }) => void;
  const finished = new Promise<{ failures: number }>((resolve) => {
    finish = resolve;
  });

  const write = (text: string): void => {
    if (text === '') return;
    output.write(text);
    atLineStart = text.endsWith('\n');
  };
  // ptc's own lines first show a CR the program's output ended with, so it cannot return over them.
  const writeLine = (text: string): void => {
    write(shown.flush());
    write(`${atLineStart ? '' : '\n'}${text}\n`);
  };
  const printEntry = (entry: OutputEntry): void => {
    if (entry.type === 'text') {
      const text = shown.chunk(entry.text);
      write(text);
      if (text === '' && entry.text !== '') atLineStart = false;
    } else {
      writeLine(programText(imageLine(entry)));
    }
  };
  const prompt = (): void => {
    if (!terminal || closed) return;
    write(shown.flush());
    // readline redraws the prompt from column 0 and clears what follows: end a partial output line first.
    if (!atLineStart) write('\n');
    rl.setPrompt(buffer.length > 0 ? CONTINUATION : PROMPT);
    rl.prompt();
  };

  const submit = async (source: string): Promise<void> => {
    const controller = new AbortController();
    running = controller;
    const program = asObjectLiteral(source, runtime.programFormat) ?? source;
    let result: RunResult;
    try {
      // Shown as Node's REPL shows it: a Map or a Date is a value to look at, not a lossy result.
      const spec = runtime.resolve({ program, ...request, stateOwner: owner, filename: `repl-${++submissions}.ts`, display: { colors } });
      result = await runtime.run(spec, { signal: controller.signal, onOutput: printEntry });
    } catch (error) {
      failures++;
      writeLine(`ptc: ${programText(messageOf(error))}`);
      return;
    } finally {
      running = undefined;
    }
    if (result.status === 'failed') failures++;
    for (const line of describeResult(result, { colors, program: programText })) writeLine(line);
  };

  // One line of input: a command, part of a submission, or the end of one.
  const take = async (line: string): Promise<void> => {
    if (buffer.length === 0) {
      const command = line.trim();
      if (command === '') return;
      if (/^\.[A-Za-z]/.test(command)) return runCommand(command);
    } else if (line.trim() === '') {
      const program = buffer.join('\n');
      buffer = [];
      return submit(program);
    }
    buffer.push(line);
    const source = buffer.join('\n');
    if (isIncomplete(`${source}\n`, runtime.programFormat)) return;
    buffer = [];
    await submit(source);
  };

  const runCommand = (command: string): void => {
    if (command === '.exit') leave();
    else if (command === '.help') write(HELP);
    else writeLine(`unknown command ${command}; .help lists the commands`);
  };

  const leave = (): void => {
    leaving = true;
    queue.length = 0;
    running?.abort(new Error('the session ended'));
    rl.close();
  };

  // Lines are taken one at a time; those that arrive during a run (piped input, typing ahead) wait.
  const pump = async (): Promise<void> => {
    if (pumping) return;
    pumping = true;
    while (queue.length > 0 && !leaving) await take(queue.shift()!);
    if (!closed) {
      pumping = false;
      return prompt();
    }
    // The session is over; pumping stays set so nothing runs after this.
    if (buffer.length > 0 && !leaving) {
      // The input ended inside a submission: run it, so the runtime reports what is missing.
      const program = buffer.join('\n');
      buffer = [];
      await submit(program);
    }
    await runtime.release(owner);
    finish({ failures });
  };

  rl.on('line', (line) => {
    interruptedOnce = false;
    queue.push(line);
    void pump();
  });
  rl.on('close', () => {
    closed = true;
    // Ctrl-D in a terminal leaves now; the end of piped input lets the queued lines finish.
    if (terminal && !leaving) {
      write('\n');
      leave();
    }
    void pump();
  });
  // readline reports Ctrl-C here only in terminal mode; a piped session has no prompt to interrupt.
  rl.on('SIGINT', () => {
    if (running !== undefined) {
      interruptedOnce = false;
      if (!running.signal.aborted) running.abort(new Error('interrupted'));
      return;
    }
    const empty = rl.line === '' && buffer.length === 0;
    write('\r\n');
    if (empty && interruptedOnce) return leave();
    interruptedOnce = empty;
    if (empty) write('(to leave, press Ctrl-C again, press Ctrl-D, or type .exit)\n');
    // Drop what was typed, keeping it on screen: delete left and right of the cursor, which
    // redraws an empty prompt on the new line.
    rl.write(null, { ctrl: true, name: 'u' });
    rl.write(null, { ctrl: true, name: 'k' });
    buffer = [];
    prompt();
  });
  prompt();
  return finished;
}

/**
 * What the session prints after a run: a note when the environment was replaced, then the value or
 * the failure. `program` shows text the program chose (on a terminal, its control characters
 * visible; a value keeps inspect()'s colours).
 */
export function describeResult(result: RunResult, options: { colors: boolean; program?: (text: string, keepColors?: boolean) => string }): string[] {
  const program = options.program ?? ((text: string) => text);
  const lines: string[] = [];
  const replaced = result.environment?.replaced;
  if (replaced !== undefined) lines.push(`(${replaced}; this is a new environment and earlier variables are gone)`);
  if (result.status === 'ok') {
    // The carrier wrote the display, colours included: only inspect()'s own colour codes survive.
    if (result.display !== undefined) lines.push(program(result.display, true));
    else if (result.value !== undefined) lines.push(program(inspect(result.value, { depth: Infinity, colors: options.colors }), true));
  } else {
    lines.push(...describeFailure(result.failure).map((line) => program(line)));
  }
  return lines;
}

/** A failure in a short readable form: `Uncaught <name>: <message>` and the stack, or `<kind>: <message>`. */
export function describeFailure(failure: Failure): string[] {
  const cleared = failure.state === 'cleared';
  if (failure.kind === 'abort') return [cleared ? 'interrupted (environment reset)' : 'interrupted (variables kept)'];
  const lines = failure.kind === 'exception' ? [uncaught(failure)] : [`${failure.kind}: ${failure.message}`];
  if (failure.binding !== undefined) lines.push(`binding: ${failure.binding}${failure.code !== undefined ? ` (code ${failure.code})` : ''}`);
  if (failure.path !== undefined) lines.push(`path: ${failure.path}`);
  if (cleared) lines.push('the environment was reset; earlier variables are gone');
  return lines;
}

// The stack already holds "<name>: <message>" (after the source excerpt, for a syntax error);
// mark that line the way Node's REPL does rather than print it twice.
function uncaught(failure: Failure): string {
  const header = `${failure.name ?? 'Error'}: ${failure.message}`;
  const stack = failure.stack ?? '';
  const at = stack.indexOf(header);
  if (at === -1) return stack === '' ? `Uncaught ${header}` : `Uncaught ${header}\n${stack}`;
  return `${stack.slice(0, at)}Uncaught ${stack.slice(at)}`;
}
