// Network allowlist for `npm run bench`: a loopback fetch() of a 1 MB body through the proxy
// against the same fetch unconfined. The path through the proxy is the one a sandboxed program
// takes: Node's env proxy (NODE_USE_ENV_PROXY + HTTP_PROXY) -> a loopback TCP port piped to the
// proxy's Unix socket (the sandbox's forwarder, its own process) -> the proxy -> the origin.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FORWARD_CONNECTION } from '../../carrier/network/byte-path.ts';
import { parseNetworkRules, startNetworkProxy } from '../../host/sandbox/network/index.ts';
import { interleave, median, ms, p90, pad, ratio } from './stats.ts';

const TARGET = 1.5;
const BODY_BYTES = 1024 * 1024;

// The origin runs in its own process, as a remote server would, and so does the forwarder, as it
// does in the sandbox: neither shares the proxy's event loop.
const ORIGIN = `
const body = Buffer.alloc(${BODY_BYTES}, 'x');
const server = require('node:http').createServer((req, res) => res.end(body));
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;
// The sandbox forwarder's own byte path (carrier/network/byte-path.ts), with its listener's options.
const FORWARDER = `
const net = require('node:net');
const { connect } = net;
${FORWARD_CONNECTION}
const server = net.createServer({ noDelay: true }, (client) => forwardConnection(client, process.argv[1], () => {}));
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;
// One fetch of the body per line on stdin; answers with the byte count.
const DRIVER = `
const lines = require('node:readline').createInterface({ input: process.stdin });
lines.on('line', async (url) => {
  const response = await fetch(url);
  const size = (await response.arrayBuffer()).byteLength;
  process.stdout.write(response.status + ' ' + size + '\\n');
});
`;

type Line = { child: ChildProcess; next(): Promise<string> };

function start(source: string, env: NodeJS.ProcessEnv, args: string[] = []): Line {
  const child = spawn(process.execPath, ['-e', source, ...args], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return { child, next: async () => String((await lines.next()).value) };
}

export async function network(): Promise<void> {
  console.log(`\n14. fetch() of a 1 MB body over loopback, through the network proxy vs direct (median / p90 of 30 after 3 warm-ups, interleaved)`);
  const dir = mkdtempSync(join(tmpdir(), 'ptc-bench-net-'));
  const origin = start(ORIGIN, process.env);
  const port = Number(await origin.next());
  const proxy = await startNetworkProxy({ rules: parseNetworkRules({ allow: [`127.0.0.1:${port}`] }), socketPath: join(dir, 'proxy.sock') });
  const forwarder = start(FORWARDER, process.env, [proxy.socketPath]);
  const frontUrl = `http://127.0.0.1:${await forwarder.next()}`;
  const { HTTP_PROXY: _h, HTTPS_PROXY: _s, ALL_PROXY: _a, NO_PROXY: _n, http_proxy: _hl, https_proxy: _sl, no_proxy: _nl, ...clean } = process.env;
  const drivers = {
    direct: start(DRIVER, clean),
    'through the proxy': start(DRIVER, { ...clean, NODE_USE_ENV_PROXY: '1', HTTP_PROXY: frontUrl }),
  };
  const url = `http://127.0.0.1:${port}/body\n`;
  try {
    const cases = Object.fromEntries(Object.entries(drivers).map(([name, driver]) => [name, async () => {
      driver.child.stdin!.write(url);
      const answer = await driver.next();
      if (answer !== `200 ${BODY_BYTES}`) throw new Error(`${name}: fetch answered ${answer}`);
    }]));
    // This process runs only the proxy (the origin, the forwarder and the clients are children), so
    // its CPU time over the proxied fetches is the proxy's cost, which load on the machine does not inflate.
    let proxyCpu = 0;
    const proxied = cases['through the proxy']!;
    cases['through the proxy'] = async () => {
      const before = process.cpuUsage();
      await proxied();
      const used = process.cpuUsage(before);
      proxyCpu += (used.user + used.system) / 1000;
    };
    const samples = await interleave(cases);
    const floor = median(samples.direct!);
    console.log(`${pad('direct')}${ms(median(samples.direct!))}${ms(p90(samples.direct!))}   (floor)`);
    const own = samples['through the proxy']!;
    const r = ratio(median(own), floor);
    console.log(`${pad('through the proxy')}${ms(median(own))}${ms(p90(own))}   ratio ${r.toFixed(2).padStart(5)}  target ≤ ${TARGET}  ${r <= TARGET ? 'PASS' : 'MISS'}`);
    console.log(`${pad('proxy CPU per fetch')}${ms(proxyCpu / 33)}   (mean of all 33; no target)`);
    const { allowed, denied } = proxy.report();
    if (denied.length > 0 || allowed[0]?.count !== 33) throw new Error(`the proxy saw ${JSON.stringify({ allowed, denied })}, expected 33 allowed fetches`);
  } finally {
    for (const { child } of [...Object.values(drivers), origin, forwarder]) child.kill();
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await network();
