// First import of the `ptc` command (bin.ts): on a Node too old for ptc, one line naming the
// version needed and the one found, and exit code 2, instead of host/require-node.ts's stack trace.
import { unsupportedNode } from '../supported-node.ts';

const refusal = unsupportedNode(process.versions.node);
if (refusal !== undefined) {
  process.stderr.write(`${refusal.replace(/^ptc /, 'ptc: ')}\n`);
  process.exit(2);
}
