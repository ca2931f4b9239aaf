// `ptc mcp` for `npm run bench`: one run_code (a program making one upstream call) through a warm
// `ptc mcp` against a direct tools/call of the same upstream tool from the same kind of client.
// Reported, with no target: run_code pays for a fresh carrier per program in per-call mode.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { interleave, median, ms, p90, pad, ratio } from './stats.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const UPSTREAM = join(ROOT, 'test', 'fixtures', 'mcp', 'upstream.mjs');

async function connect(command: string, args: string[], cwd: string): Promise<Client> {
  const client = new Client({ name: 'ptc-bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command, args, cwd, stderr: 'inherit' }));
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>, expected: string): Promise<void> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((item) => (item.type === 'text' ? item.text : '')).join('');
  if (result.isError || text !== expected) throw new Error(`${name} answered ${JSON.stringify(result)}`);
}

export async function mcp(): Promise<void> {
  const binary = join(ROOT, 'dist', 'ptc');
  const [command, ...prefix] = existsSync(binary) ? [binary] : [process.execPath, join(ROOT, 'host', 'cli', 'bin.ts')];
  console.log(`\n9. one run_code through a warm \`ptc mcp\` (${existsSync(binary) ? 'dist/ptc' : 'from source'}) vs a direct tools/call of the upstream tool (median / p90 of 30 after 3 warm-ups, interleaved; no target)`);
  const dir = mkdtempSync(join(tmpdir(), 'ptc-bench-mcp-'));
  const config = join(dir, 'servers.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { tracker: { command: process.execPath, args: [UPSTREAM] } } }));
  const direct = await connect(process.execPath, [UPSTREAM], dir);
  const ptc = await connect(command!, [...prefix, 'mcp', '--config', config], dir);
  try {
    const samples = await interleave({
      direct: () => call(direct, 'echo', { text: 'x' }, 'you said: x'),
      'run_code, one call': () => call(ptc, 'run_code', { program: 'return await tracker.echo({ text: "x" })' }, '"you said: x"'),
      'run_code, return 1': () => call(ptc, 'run_code', { program: 'return 1' }, '1'),
    });
    const floor = median(samples.direct!);
    console.log(`${pad('floor: direct tools/call')}${ms(floor)}${ms(p90(samples.direct!))}`);
    for (const name of ['run_code, one call', 'run_code, return 1']) {
      const own = samples[name]!;
      console.log(`${pad(name)}${ms(median(own))}${ms(p90(own))}   ratio ${ratio(median(own), floor).toFixed(2).padStart(6)}  (report)`);
    }
  } finally {
    await Promise.all([direct.close(), ptc.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

// `node test/bench/mcp.ts` runs this section alone.
if (import.meta.filename === process.argv[1]) await mcp();
