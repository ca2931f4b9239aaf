// First import of the library's entry (host/index.ts): a Node too old for ptc is refused here, by
// version, before a module that needs a newer one evaluates. A module of its own because ES
// modules evaluate their imports before their own body.
import { unsupportedNode } from './supported-node.ts';

const refusal = unsupportedNode(process.versions.node);
if (refusal !== undefined) throw new Error(refusal);
