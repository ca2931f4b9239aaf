// Entry of the single executable: the hidden selector makes it a carrier, another makes it this
// user's resident pool, otherwise it is the CLI. This file and `ptc run`'s fast path to a resident
// pool are all the main script holds; the carrier and the host are parts of their own
// (build/parts/), embedded as assets with their V8 code caches and compiled when a start needs
// them: loading the whole 2.2 MB bundle cost every start about 6 ms and every idle carrier its
// source text.
import { CARRIER_SELECTOR, RESIDENT_SELECTOR } from '../wire/revision.ts';
import { bootMark } from '../wire/boot-mark.ts';
import { loadPart } from './part-loader.ts';

/** Defined by build/build.ts: the package's version. */
declare const PTC_BUILD: { version: string };

type HostPart = typeof import('./parts/host.ts');
type CarrierPart = typeof import('./parts/carrier.ts');

// Boot marks (ptc:*) time each phase of a start for `npm run bench` (test/bench/boot.ts); without
// the bench's probe each is one property read (wire/boot-mark.ts).
bootMark('ptc:entry');

if (process.env[CARRIER_SELECTOR] === '1') {
  void loadPart<CarrierPart>('carrier').runCarrier();
} else if (process.env[RESIDENT_SELECTOR] !== undefined) {
  const bootCwd = process.env[RESIDENT_SELECTOR];
  delete process.env[RESIDENT_SELECTOR];
  void loadPart<HostPart>('host').residentDaemon()
    .then(({ serveResident, residentIdleMs }) => serveResident(PTC_BUILD.version, bootCwd, residentIdleMs(process.env)))
    .then(
      () => process.exit(0),
      (error: Error) => {
        process.stderr.write(`${error.message}\n`);
        process.exit(1);
      },
    );
} else {
  void cli(process.argv.slice(2));
}

async function cli(argv: string[]): Promise<void> {
  // `ptc --version` alone prints what the parser would print for it, without loading the parser.
  if (argv.length === 1 && argv[0] === '--version') {
    process.stdout.write(`ptc ${PTC_BUILD.version}\n`);
    return;
  }
  // `ptc run` first asks this user's resident pool (when one serves this environment), whose
  // carrier is already booted; otherwise it runs here, its carrier booting beside the CLI's modules.
  let startIn: string | undefined;
  if (argv[0] === 'run') {
    const { runResident } = await import('../host/cli/resident-client.ts');
    const outcome = await runResident(argv.slice(1), PTC_BUILD.version);
    if ('exitCode' in outcome) {
      process.exitCode = outcome.exitCode;
      return;
    }
    startIn = outcome.startIn;
  }
  const host = loadPart<HostPart>('host');
  const { runsInDefaultCarrier } = await host.headStart();
  if (runsInDefaultCarrier(argv)) await (await host.prestart()).prestartDefaultCarrier();
  const { main } = await host.cli();
  process.exitCode = await main(argv);
  // PTC_RESIDENT=1: the next `ptc run` here finds a pool, started once this run has printed.
  if (startIn !== undefined) await (await import('../host/cli/resident-client.ts')).startPool(startIn);
}
