// bubblewrap's argv lives in carrier/protocol/bwrap.ts, shared with the relay that confines carriers
// on the far side of SSH.
export { bwrapArgs, within, type BwrapLayout } from '../../carrier/protocol/bwrap.ts';
