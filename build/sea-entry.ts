// Entry of the single executable: the hidden selector makes it a carrier, otherwise it is the CLI.
// Both branches load lazily so a carrier never initialises the CLI's modules, and vice versa.
import { CARRIER_SELECTOR } from '../wire/revision.ts';
import { bootMark } from '../wire/boot-mark.ts';

// Boot marks (ptc:*) time each phase of a start for `npm run bench` (test/bench/boot.ts); without
// the bench's probe each is one property read (wire/boot-mark.ts).
bootMark('ptc:entry');

if (process.env[CARRIER_SELECTOR] === '1') {
  void import('../carrier/boot/start.ts').then(({ runCarrier }) => runCarrier());
} else {
  const argv = process.argv.slice(2);
  void import('../host/cli/head-start.ts')
    .then(({ runsInDefaultCarrier }) => (runsInDefaultCarrier(argv) ? import('../host/prestart.ts').then(({ prestartDefaultCarrier }) => prestartDefaultCarrier()) : undefined))
    .then(() => import('../host/cli/cli.ts'))
    .then(async ({ main }) => {
      process.exitCode = await main(argv);
    });
}
