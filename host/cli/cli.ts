// The ptc command line: a thin layer over the library. It parses flags, calls the library, prints,
// and turns outcomes into exit codes: 0 ok, 1 the program failed, 2 usage or configuration error.
import { resolve as resolvePath } from 'node:path';
import yargs, { type Argv } from 'yargs';
import { bootMark } from '../../wire/boot-mark.ts';
import { colorEnabled } from './color.ts';
import { readProgram } from './program-file.ts';
import { unknownArgumentLine, unknownOptions } from './did-you-mean.ts';
import { limitOptions, loadBindings, loadConfig, sandboxOptions, usageLine, UsageError, type RunArgs } from './options.ts';
import type { ReplArgs } from './repl.ts';
import { EXECUTION_MODES } from '../modes.ts';

/** The command names; only the one being run gets its parser built (see main). */
const COMMANDS = ['run', 'repl', 'mcp', 'serve', 'runs', 'resume', 'revert', 'resident', 'version', 'bootstrap'];
/** The commands whose builders live in the front ends' modules (loaded by frontEnds()). */
const FRONT_END_COMMANDS = ['repl', 'mcp', 'serve', 'runs', 'resume', 'revert'];

/** Defined in dist/ builds (build/build.ts): the package's version, which build.ts checks equals VERSION. */
declare const PTC_BUILD: { version: string; node: string } | undefined;

/**
 * The library and the other front ends load when a command needs them, not at every start:
 * `ptc --version` and `ptc --help` never initialise the runtime, and `ptc run` not the REPL's,
 * server's or MCP front end's modules.
 */
const library = () => import('../index.ts');
// Loaded by the commands that read or write files: `ptc --version` and `--help` need none of it.
const files = () => import('node:fs/promises');
const frontEnds = () => Promise.all([import('./repl.ts'), import('./mcp.ts'), import('./serve.ts'), import('./runs.ts')]);

/** Runs the CLI with the given arguments; resolves with the process exit code. */
export async function main(argv: string[]): Promise<number> {
  bootMark('ptc:cli');
  let exitCode = 0;
  // A reader that stops early (`ptc version | head -1`) closes the pipe: that ends the command
  // quietly, as it does for other Unix tools, instead of an unhandled EPIPE stack.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(exitCode);
    });
  }
  // Building a command's parser costs start-up time on every process, so only the command being
  // run is declared; without a known command first (top-level help, a typo) all of them are, for
  // the command list and the usage error.
  const chosen = COMMANDS.find((name) => name === argv[0]);
  const declared = (name: string): boolean => chosen === undefined || chosen === name;
  // A builder runs only for the command yargs runs; with none named first, one may still be named
  // later (`ptc --json run x`), so the front ends' builders are then loaded too.
  const named = chosen ?? COMMANDS.find((name) => argv.includes(name));
  const needsFrontEnds = named !== undefined && (chosen === undefined || FRONT_END_COMMANDS.includes(named));
  const [repl, mcp, serve, runs] = needsFrontEnds ? await frontEnds() : [];
  const VERSION = typeof PTC_BUILD !== 'undefined' ? PTC_BUILD.version : (await library()).VERSION;
  const parser = yargs(argv).scriptName('ptc').usage('$0 <command> [options]');
  // The command whose builder ran, to name its options when one is unknown (see the fail handler).
  let scope: { name: string; command: Argv } | undefined;
  const building = (name: string, build: (command: Argv) => Argv) => (command: Argv): Argv => {
    scope = { name, command };
    return build(command);
  };
  if (declared('run')) {
    parser.command(
      'run [file]',
      'Run a program (an async function body in TypeScript) from a file, or from stdin with "-"',
      building('run', (command) => runOptions(command)
        .example('$0 run triage.ts --bindings tools.mjs', 'Run a program whose bindings are the functions tools.mjs exports')
        .example("echo 'return 1 + 1' | $0 run -", 'Run a program from stdin')
        .example('$0 run job.ts --json', 'Print one lossless JSON result')
        .example('$0 run job.ts --allow-network', 'Let the program use the network')),
      async (args) => {
        exitCode = await runCommand(args as unknown as RunArgs);
      },
    );
  }
  if (declared('repl')) {
    parser.command(
      'repl',
      'Start an interactive session on one retained environment (.help inside lists its commands)',
      building('repl', (command) => repl!.replOptions(command)
        .example('$0 repl --bindings tools.mjs', 'A session whose bindings are the functions tools.mjs exports')
        .example("printf 'let a = 1\\na + 1\\n' | $0 repl", 'Run piped statements in one environment and print each value')),
      async (args) => {
        exitCode = await repl!.replCommand(args as unknown as ReplArgs);
      },
    );
  }
  if (declared('mcp')) {
    parser.command(
      'mcp',
      'Serve one code-mode tool (run_code) over MCP stdio, with the tools of the upstream MCP servers in --config as bindings',
      building('mcp', (command) => mcp!.mcpOptions(command)
        .example('$0 mcp --config servers.json', 'Serve run_code to an MCP client, with the tools of the servers in servers.json ({"mcpServers": {...}}) as bindings')),
      async (args) => {
        exitCode = await mcp!.mcpCommand(args as unknown as Parameters<typeof import('./mcp.ts').mcpCommand>[0]);
      },
    );
  }
  if (declared('serve')) {
    parser.command(
      'serve',
      'Serve JSON-RPC 2.0 on stdin/stdout, one message a line: a harness in any language runs programs with its own tools',
      building('serve', (command) => serve!.serveOptions(command)
        .example('$0 serve --sandbox read-only', 'Serve JSON-RPC on stdio; the harness sends initialize, then run requests with its tools')),
      async (args) => {
        exitCode = await serve!.serveCommand(args as unknown as RunArgs);
      },
    );
  }
  if (declared('runs')) {
    parser.command(
      'runs [run]',
      'List the runs a journal holds, or one run\'s binding calls',
      building('runs', (command) => runs!.runsOptions(command)
        .example('$0 runs --journal runs.db', 'List the runs the journal holds')
        .example('$0 runs --journal runs.db <runId> --json', 'Print one run\'s binding calls as JSON')),
      async (args) => {
        exitCode = await runs!.runsCommand(args as unknown as import('./runs.ts').RunsArgs);
      },
    );
  }
  if (declared('resume')) {
    parser.command(
      'resume <run>',
      'Take up a journaled run that never finished: its program runs again, and the calls the journal answered are not made again',
      building('resume', (command) => runs!.resumeOptions(command)
        .example('$0 runs --journal runs.db', 'Find the run: its status is running or waiting')
        .example('$0 resume <runId> --journal runs.db --bindings tools.mjs', 'Resume it; tools.mjs answers the calls the journal has no answer for')),
      async (args) => {
        exitCode = await runs!.resumeCommand(args as unknown as import('./runs.ts').JournalActionArgs);
      },
    );
  }
  if (declared('revert')) {
    parser.command(
      'revert <run>',
      'Roll back a journaled run\'s applied calls, newest first, through each binding\'s revert',
      building('revert', (command) => runs!.revertOptions(command)
        .example('$0 revert <runId> --journal runs.db --bindings tools.mjs', 'Undo what the run did, through the reverts of the bindings tools.mjs exports')),
      async (args) => {
        exitCode = await runs!.revertCommand(args as unknown as import('./runs.ts').JournalActionArgs);
      },
    );
  }
  if (declared('resident')) {
    parser.command(
      'resident <action>',
      'Start, list or stop this user\'s resident pools: a `ptc run` whose environment one serves runs in its already-booted carrier',
      building('resident', (command) => residentOptions(command)
        .example('$0 resident start', 'Start a pool for this environment; later `ptc run`s here start in about a bare Node\'s time')
        .example('$0 resident status', 'List this user\'s pools')
        .example('$0 resident stop', 'Stop them all')),
      async (args) => {
        const { residentCommand } = await import('./resident.ts');
        exitCode = await residentCommand(args as unknown as import('./resident.ts').ResidentArgs, VERSION);
      },
    );
  }
  if (declared('version')) {
    parser.command(
      'version',
      'Print the ptc version, the Node inside, the protocol revision, the platform, the SHA-256 of the embedded bootstrap and which sandbox backends work here',
      building('version', (command) => command.option('json', { type: 'boolean', default: false, describe: 'Print it as one JSON object' })),
      async (args) => {
        const [{ versionReport }, { versionText }] = await Promise.all([library(), import('./version.ts')]);
        const report = await versionReport();
        process.stdout.write(args.json ? `${JSON.stringify(report)}\n` : versionText(report));
      },
    );
  }
  if (declared('bootstrap')) {
    parser.command(
      'bootstrap',
      'Write the carrier bootstrap that a remote Node (>= 20.12) runs for node-script launches',
      building('bootstrap', (command) => command.option('out', { type: 'string', demandOption: true, describe: 'File to write' })),
      async (args) => {
        const out = resolvePath(String(args.out));
        const source = await (await library()).readBootstrap();
        try {
          const { writeFile, chmod } = await files();
          await writeFile(out, source);
          await chmod(out, 0o644);
        } catch (error) {
          throw new UsageError(`cannot write --out ${JSON.stringify(String(args.out))}: ${(error as Error).message}`, { cause: error });
        }
        process.stdout.write(`wrote ${out}\n`);
      },
    );
  }
  parser
    .demandCommand(1, 'Name a command: run, repl, serve, mcp, runs, resume, revert, resident, version or bootstrap')
    .strict()
    .example('$0 run triage.ts --bindings tools.mjs', 'Run a program whose bindings are the functions tools.mjs exports')
    .example("echo 'return 1 + 1' | $0 run -", 'Run a program from stdin')
    .example('$0 repl', 'Start an interactive session')
    .example('$0 run --help', 'The options of one command')
    .help()
    .version('version', 'Print the ptc version', `ptc ${VERSION}`)
    .exitProcess(false)
    .fail((message, error) => {
      if (error) throw error;
      // yargs names an unknown option twice (as typed and camel-cased) and suggests nothing; and
      // it reports a required option missing before an unknown one, which is often its misspelling.
      const options = Object.keys((((scope?.command ?? parser) as unknown) as { getOptions(): { key: Record<string, unknown> } }).getOptions().key);
      const listed = /^Unknown arguments?: (.*)$/s.exec(message)?.[1]!.split(', ');
      const unknown = listed ?? (scope === undefined ? [] : unknownOptions(argv, options));
      if (unknown.length === 0) throw new UsageError(message);
      throw new UsageError(unknownArgumentLine(unknown, argv, options, scope === undefined ? COMMANDS : undefined, scope === undefined ? 'ptc' : `ptc ${scope.name}`));
    });
  try {
    await parser.parseAsync();
    if (argv.includes('--help') || argv.includes('-h')) return 0;
    return exitCode;
  } catch (error) {
    process.stderr.write(usageLine(error));
    return 2;
  }
}

function runOptions(command: Argv): Argv {
  command
    .positional('file', { type: 'string', describe: 'Program file, or - for stdin' })
    .option('json', { type: 'boolean', default: false, describe: 'Print exactly one lossless JSON result on stdout' })
    .option('bindings', { type: 'string', describe: 'Module whose exported functions (and objects of functions) become bindings' })
    .option('config', { type: 'string', describe: 'JSON file with runtime configuration' })
    .option('cwd', { type: 'string', describe: 'Working directory of the program' })
    .option('mode', {
      type: 'string',
      choices: EXECUTION_MODES,
      describe: 'Execution mode, which sets the program syntax: async function body, Script, or scoped REPL statements',
    })
    .option('node', { type: 'string', describe: 'Run the carrier with this Node executable (node-script launch)' })
    .option('bootstrap', { type: 'string', describe: 'Bootstrap file for --node (default: bootstrap.mjs next to ptc)' })
    .option('discard-completion', { type: 'boolean', default: false, describe: 'Do not return the completion value' });
  sandboxOptions(command);
  return limitOptions(command);
}

const RESIDENT_ACTIONS = ['start', 'status', 'stop'] as const;

/** The options of `ptc resident` (its command runs in resident.ts, loaded only then). */
function residentOptions(command: Argv): Argv {
  return command
    .positional('action', { type: 'string', choices: RESIDENT_ACTIONS, describe: 'start one for this environment, list them, or stop them all' })
    .option('json', { type: 'boolean', default: false, describe: 'status: print one JSON object: the directory, the socket of this environment\'s pool, and the pools running' })
    .option('idle-ms', { type: 'string', requiresArg: true, describe: 'start: exit after this long with no client (default 300000, or PTC_RESIDENT_IDLE_MS)' });
}

async function runCommand(args: RunArgs): Promise<number> {
  bootMark('ptc:parsed');
  const [{ createRuntime }, { HumanPrinter, resultJson }] = await Promise.all([library(), import('./print.ts')]);
  const config = await loadConfig(args);
  const bindings = args.bindings === undefined ? undefined : await loadBindings(args.bindings);
  const program = await readProgram(args.file);
  let runtime;
  let spec;
  try {
    runtime = createRuntime(config);
    spec = runtime.resolve({
      program: program.source,
      ...(bindings ? { bindings } : {}),
      ...(args.cwd !== undefined ? { cwd: args.cwd } : {}),
      filename: program.filename,
      discardCompletion: args['discard-completion'],
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const controller = new AbortController();
  const interrupt = (): void => controller.abort(new Error('interrupted'));
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const printer = new HumanPrinter(process.stdout, process.stderr, colorEnabled(process.stdout));
  bootMark('ptc:run');
  try {
    const result = await runtime.run(spec, {
      signal: controller.signal,
      ...(args.json ? {} : { onOutput: printer.entry }),
    });
    bootMark('ptc:result');
    if (args.json) process.stdout.write(`${resultJson(result)}\n`);
    else printer.outcome(result);
    bootMark('ptc:printed');
    return result.status === 'ok' ? 0 : 1;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await runtime.dispose();
    bootMark('ptc:disposed');
  }
}
