// Carrier entry: the embedded binary (selected by its hidden env selector), `node carrier/main.ts`
// from source, and dist/bootstrap.mjs for node-script launches all start here.
import { runCarrier } from './carrier.ts';

runCarrier();
