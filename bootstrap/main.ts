// Carrier entry: the embedded binary (selected by its hidden env selector), `node bootstrap/main.ts`
// from source, and dist/bootstrap.mjs for node-script launches all start here. With `--relay` the
// same file is the far end of an SSH (or other stdio-only) launch: it starts the real carrier on
// its machine, this file again without the flag, and relays its streams (relay/relay.ts); with
// `--probe` it says what that machine offers (relay/probe.ts). Each role loads only its own
// modules: the relay's and the probe's child_process would otherwise sit in every idle carrier.
import { closeInheritedDescriptors } from '../carrier/boot/descriptors.ts';

const role = process.argv[2];
// The relay and the probe run unconfined on the far side, and what the relay has open its carrier
// would inherit: they keep only their stdio (the carrier closes its own on start, carrier.ts).
if (role === '--relay' || role === '--probe') closeInheritedDescriptors([0, 1, 2]);
if (role === '--relay' && process.argv[1] !== undefined) {
  const bootstrap = process.argv[1];
  // Under the ssh loader this module is a data: URL of the bytes it verified: the carrier gets those.
  const url = import.meta.url;
  void import('../relay/relay.ts').then(({ runRelay }) => runRelay(bootstrap, url));
} else if (role === '--probe') {
  void import('../relay/probe.ts').then(({ runProbe }) => runProbe(process.argv[3]));
} else {
  void import('../carrier/boot/start.ts').then(({ runCarrier }) => runCarrier());
}
