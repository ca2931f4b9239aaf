// Network allowlists: rules and the host-side proxy that enforces them.
export { parseNetworkRules, decide, normalizeHost, NOT_IN_ALLOWLIST, type NetworkRules, type CompiledRules, type Decision } from './rules.ts';
export { startNetworkProxy, type NetworkProxy, type NetworkProxyOptions, type NetworkReport, type Destination } from './proxy.ts';
export { denialMessage } from './gate.ts';
export { SOCKS_REPLY } from './socks5.ts';
