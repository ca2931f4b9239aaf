// Node's permission flags live in carrier/protocol/node-permission.ts, shared with the relay that
// confines carriers on the far side of SSH.
export { appendNodeOptions, permissionArgs, readableRoots } from '../../carrier/protocol/node-permission.ts';
