// Carrier entry: the embedded binary (selected by its hidden env selector), `node carrier/main.ts`
// from source, and dist/bootstrap.mjs for node-script launches all start here. With `--relay` the
// same file is the far end of an SSH (or other stdio-only) launch: it starts the real carrier on
// its machine, this file again without the flag, and relays its streams (relay/relay.ts); with
// `--probe` it says what that machine offers (relay/probe.ts).
import { runCarrier } from './carrier.ts';
import { runProbe } from './relay/probe.ts';
import { runRelay } from './relay/relay.ts';

const role = process.argv[2];
if (role === '--relay' && process.argv[1] !== undefined) runRelay(process.argv[1]);
else if (role === '--probe') runProbe(process.argv[3]);
else runCarrier();
