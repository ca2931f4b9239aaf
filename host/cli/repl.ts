// `ptc repl`: an interactive session on one retained environment. Lines are read with
// node:readline and buffered until they parse; each submission is one run for the session's
// owner, its output printed as it arrives and its value or failure after it. Ctrl-C interrupts the
// run in progress (the carrier keeps the variables, a synchronous loop included:
// carrier/run/interrupt.ts) or, at the prompt, discards the input. On a terminal the session
// prints a banner, completes names with Tab (asked from the carrier: runtime.complete), keeps
// history between sessions (repl-history.ts) and has Node's `.editor`; `_` and `_error` hold the
// last value and error in every session. Without a terminal the session reads stdin to its end, so
// `printf 'let a = 1\na + 1\n' | ptc repl` prints 2. On a terminal, what a program chose (its
// output, values, failures) is shown with its control characters visible (terminal-text.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import { inspect } from 'node:util';
import type { Argv } from 'yargs';
import { RETAINED_MODES, type RetainedMode } from '../modes.ts';
import { availableBackends, createRuntime, resolvePersistentExecution, VERSION, type Bindings, type Failure, type OutputEntry, type Runtime, type RunResult, type RuntimeConfig } from '../index.ts';
import { asObjectLiteral, completionTarget, declaredNames, isIncomplete } from './repl-input.ts';
import { HISTORY_SIZE, historyPath, loadHistory, saveHistory } from './repl-history.ts';
import { limitOptions, loadBindings, loadConfig, messageOf, numberFlag, sandboxOptions, UsageError } from './options.ts';
import { imageLine } from './print.ts';
import { TerminalText } from './terminal-text.ts';
import { colorEnabled } from './color.ts';

const PROMPT = 'ptc> ';
const CONTINUATION = '...> ';
const HELP = `.break    discard the input being typed on "...>" lines
.clear    end this environment: the next submission starts a new one, every variable gone
.editor   enter editor mode: type several lines, Ctrl-D runs them, Ctrl-C cancels
.exit     leave the session (also Ctrl-D, or Ctrl-C twice at an empty prompt)
.help     show these commands
.load     run a file's lines as if typed: .load FILE
.save     write this session's submissions to a file: .save FILE
Ctrl-C    interrupt the running program, keeping the variables; at the prompt, discard the current input
Tab       complete a name: a variable, a global, a binding, or a property after "."
_ is the last value and _error the last error thrown; assigning _ yourself turns that off.
Input continues on "...> " lines until it parses; an empty line submits it as it is.
`;

type ReplMode = RetainedMode;

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
      choices: RETAINED_MODES,
      default: RETAINED_MODES[0],
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
    const banner = process.stdin.isTTY === true ? await bannerLine(config, runtime) : undefined;
    const { failures } = await runSession(runtime, request, process.stdin, process.stdout, { banner, history: historyPath() });
    // A script piped in fails like a script: any failed submission makes the exit code 1.
    return process.stdin.isTTY !== true && failures > 0 ? 1 : 0;
  } finally {
    await runtime.dispose();
  }
}

/** The first line of a terminal session: ptc's version, the retained mode, the sandbox, and where help is. */
async function bannerLine(config: RuntimeConfig, runtime: Runtime): Promise<string> {
  const mode = config.executionMode === 'vm-script' ? 'vm-script (Scripts in one context)' : config.replScoped === false ? "persistent-in-memory (Node's REPL)" : 'persistent-in-memory (scoped REPL)';
  const chosen = runtime.config.sandbox.backend ?? 'auto';
  let backend: string = chosen;
  // full-access has nothing to enforce: ptc confines nothing whatever the backend.
  if (runtime.config.policy.mode === 'full-access') backend = 'none';
  else if (chosen === 'auto') {
    // What `auto` picks on this machine (the probe's answer is cached), as the first run will.
    const found = await availableBackends({ ...(runtime.config.sandbox.bwrapPath !== undefined ? { bwrapPath: runtime.config.sandbox.bwrapPath } : {}) }).catch(() => undefined);
    backend = found === undefined ? 'auto' : found.bwrap === undefined ? 'bwrap' : found.nodePermission === undefined ? 'node-permission' : 'none';
  }
  return `ptc ${VERSION} repl · ${mode} · sandbox ${backend}, policy ${runtime.config.policy.mode} · .help for commands`;
}

/** The configuration with the session's retained mode; the mode fields of --config give way to the flags. */
export function retainedConfig(base: RuntimeConfig, mode: ReplMode, replNode: boolean): RuntimeConfig {
  // The retained settings of each mode come from the one table of them (resolvePersistentExecution);
  // only the REPL's own choice of evaluator is added here.
  const settings = resolvePersistentExecution(mode === 'vm-script' ? 'vm-script' : 'scoped-repl');
  return { ...base, ...settings, ...(settings.executionMode === 'persistent-in-memory' ? { replScoped: !replNode } : {}) };
}

interface SessionRequest {
  bindings?: Bindings;
  cwd?: string;
  timeoutMs: number | null;
}

type Input = NodeJS.ReadableStream & { isTTY?: boolean };
type Output = NodeJS.WritableStream & { isTTY?: boolean };

/** How a session looks and what it keeps; the defaults are those of a terminal. */
export interface SessionOptions {
  /** The one line printed first on a terminal. */
  banner?: string;
  /** The history file; undefined keeps none. */
  history?: string;
}

/** What readline keeps that this session reads and changes: the typed line, the history, and the hook for keys. */
type ReadlineState = Interface & { line: string; history: string[]; _ttyWrite: (text: string | undefined, key: { ctrl?: boolean; name?: string } | undefined) => void };

/** Reads, runs and prints submissions until .exit, Ctrl-D, Ctrl-C twice at an empty prompt, or the end of input; then releases the environment. Resolves with how many submissions failed. */
export function runSession(runtime: Runtime, request: SessionRequest, input: Input, output: Output, options: SessionOptions = {}): Promise<{ failures: number }> {
  let owner = {};
  const terminal = input.isTTY === true;
  const colors = colorEnabled(output);
  const shown = new TerminalText(output.isTTY !== true);
  const programText = (text: string, keepColors?: boolean): string => shown.whole(text, keepColors);
  const history = terminal && options.history !== undefined ? options.history : undefined;
  const rl = createInterface({
    input,
    output,
    terminal,
    prompt: PROMPT,
    historySize: HISTORY_SIZE,
    removeHistoryDuplicates: true,
    ...(history !== undefined ? { history: loadHistory(history) } : {}),
    ...(terminal ? { completer: (line: string, done: (error: null, result: [string[], string]) => void) => void complete(line).then((result) => done(null, result)) } : {}),
  }) as ReadlineState;
  const queue: string[] = [];
  let buffer: string[] = [];
  /** Every line of the submissions so far, for .save. */
  const submitted: string[] = [];
  /** Top-level names the session's submissions declared, for Tab (the carrier lists globals and the scoped REPL's names). */
  const declared = new Set<string>();
  /** Lines typed in editor mode, or undefined outside it. */
  let editor: string[] | undefined;
  let submissions = 0;
  let failures = 0;
  let running: AbortController | undefined;
  let pumping = false;
  let closed = false;
  let leaving = false;
  let interruptedOnce = false;
  let atLineStart = true;
  let historyProblem = false;
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
    rl.setPrompt(editor !== undefined ? '' : buffer.length > 0 ? CONTINUATION : PROMPT);
    rl.prompt();
  };

  // Tab: the names the carrier finds after the typed path, and at the top level those declared here.
  const complete = async (line: string): Promise<[string[], string]> => {
    const target = completionTarget(line);
    if (target === undefined || running !== undefined) return [[], line];
    let names: string[] = [];
    try {
      names = await runtime.complete(owner, target.path);
    } catch {
      // No completion is better than a broken prompt.
    }
    if (target.path.length === 0) names = [...new Set([...declared, ...names])].sort();
    return [names.filter((name) => name.startsWith(target.partial)), target.partial];
  };

  const submit = async (source: string): Promise<void> => {
    const controller = new AbortController();
    running = controller;
    submitted.push(source);
    const program = asObjectLiteral(source, runtime.programFormat) ?? source;
    let result: RunResult;
    try {
      // Shown as Node's REPL shows it: a Map or a Date is a value to look at, not a lossy result.
      const spec = runtime.resolve({ program, ...request, stateOwner: owner, filename: `repl-${++submissions}.ts`, display: { colors, underscore: true } });
      result = await runtime.run(spec, { signal: controller.signal, onOutput: printEntry });
    } catch (error) {
      failures++;
      writeLine(`ptc: ${programText(messageOf(error))}`);
      return;
    } finally {
      running = undefined;
    }
    if (result.environment?.fresh === true) declared.clear();
    for (const name of declaredNames(program, runtime.programFormat)) declared.add(name);
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
    } else if (line.trim() === '.break') {
      buffer = [];
      return;
    }
    buffer.push(line);
    const source = buffer.join('\n');
    if (isIncomplete(`${source}\n`, runtime.programFormat)) return;
    buffer = [];
    await submit(source);
  };

  const runCommand = async (command: string): Promise<void> => {
    const [name, ...rest] = command.split(/\s+/);
    const argument = rest.join(' ');
    if (name === '.exit') leave();
    else if (name === '.help') write(HELP);
    else if (name === '.break') buffer = [];
    else if (name === '.clear') {
      writeLine('Clearing context...');
      const ended = owner;
      owner = {};
      declared.clear();
      await runtime.release(ended);
    } else if (name === '.editor') {
      if (!terminal) return writeLine('.editor needs a terminal');
      editor = [];
      writeLine('// Entering editor mode (Ctrl+D to finish, Ctrl+C to cancel)');
    } else if (name === '.save') {
      if (argument === '') return writeLine('.save needs a file name: .save FILE');
      try {
        writeFileSync(argument, submitted.length === 0 ? '' : `${submitted.join('\n')}\n`);
        writeLine(`Session saved to: ${argument}`);
      } catch (error) {
        writeLine(`Failed to save: ${argument}: ${messageOf(error)}`);
      }
    } else if (name === '.load') {
      if (argument === '') return writeLine('.load needs a file name: .load FILE');
      let text: string;
      try {
        text = readFileSync(argument, 'utf8');
      } catch (error) {
        return writeLine(`Failed to load: ${argument}: ${messageOf(error)}`);
      }
      // As if typed: the lines go before what is queued, and a submission left open is submitted.
      const lines = text.replace(/\r?\n$/, '').split(/\r?\n/);
      for (const line of lines) {
        if (leaving) return;
        await take(line);
      }
      if (buffer.length > 0) {
        const program = buffer.join('\n');
        buffer = [];
        await submit(program);
      }
    } else writeLine(`unknown command ${command}; .help lists the commands`);
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

  if (terminal) {
    // Editor mode takes every line as it is; Ctrl-D submits them (Node's REPL hooks its keys the same way).
    const ttyWrite = rl._ttyWrite.bind(rl);
    rl._ttyWrite = (text, key) => {
      if (editor !== undefined && key?.ctrl === true && key.name === 'd') {
        const lines = [...editor, ...(rl.line === '' ? [] : [rl.line])];
        editor = undefined;
        // The last line stays on screen; readline's copy of it is dropped on the next row.
        write('\n');
        rl.write(null, { ctrl: true, name: 'u' });
        rl.write(null, { ctrl: true, name: 'k' });
        if (lines.join('').trim() === '') return prompt();
        // At the prompt nothing is pumping: the submission runs as the pump would run it.
        void (async () => {
          pumping = true;
          await submit(lines.join('\n'));
          pumping = false;
          void pump();
        })();
        return;
      }
      ttyWrite(text, key);
    };
  }
  if (history !== undefined) {
    (rl as Interface).on('history', (lines: string[]) => {
      const problem = saveHistory(history, lines);
      if (problem !== undefined && !historyProblem) {
        historyProblem = true;
        writeLine(`ptc: ${problem}`);
      }
    });
  }

  rl.on('line', (line) => {
    interruptedOnce = false;
    if (editor !== undefined) {
      editor.push(line);
      return;
    }
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
    const empty = rl.line === '' && buffer.length === 0 && editor === undefined;
    write('\r\n');
    if (empty && interruptedOnce) return leave();
    interruptedOnce = empty;
    if (empty) write('(to leave, press Ctrl-C again, press Ctrl-D, or type .exit)\n');
    // Drop what was typed, keeping it on screen: delete left and right of the cursor, which
    // redraws an empty prompt on the new line.
    rl.write(null, { ctrl: true, name: 'u' });
    rl.write(null, { ctrl: true, name: 'k' });
    buffer = [];
    editor = undefined;
    prompt();
  });
  if (terminal && options.banner !== undefined) writeLine(options.banner);
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
  if (failure.kind === 'abort') {
    if (!cleared) return ['interrupted (variables kept)'];
    // Why the interrupt could not keep the environment (host/execution/run/retention.ts says it after "; ").
    const why = failure.message.indexOf('; it did not stop');
    return why === -1 ? ['interrupted (environment reset)'] : ['interrupted (environment reset)', failure.message.slice(why + 2)];
  }
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
