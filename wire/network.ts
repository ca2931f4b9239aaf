// How a confined carrier reaches the host's network proxy (host/sandbox/network/): the host binds
// the proxy's Unix socket into the sandbox and names it in PTC_NETWORK_SOCKET; before any program
// runs, the carrier listens on 127.0.0.1:FORWARD_PORT inside the sandbox's network namespace and
// pipes each connection to that socket (carrier/network/forward.ts). The proxy variables point
// fetch, http/https and child processes such as curl at that port.

/** Names the proxy's Unix socket for the carrier; the carrier removes it from its environment. */
export const NETWORK_SOCKET_ENV = 'PTC_NETWORK_SOCKET';

/** The forwarder's port. The namespace is the carrier's alone, so the port is always free;
 * 3128 is the port HTTP proxies (Squid) conventionally use. */
export const FORWARD_PORT = 3128;

/** The variables that route a carrier and its children through the forwarder. One listener speaks
 * HTTP forward proxying, CONNECT and SOCKS5, so all of them name the same port; socks5h leaves
 * name resolution to the proxy, which resolves on the host. NO_PROXY is not set: nothing bypasses
 * it (the namespace's own loopback holds only the forwarder). NODE_USE_ENV_PROXY makes Node's
 * fetch and http/https honour them (Node 24 and 22.21; older Nodes ignore it). */
export function proxyEnvironment(port: number = FORWARD_PORT): Record<string, string> {
  const http = `http://127.0.0.1:${port}`;
  const socks = `socks5h://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    ALL_PROXY: socks,
    http_proxy: http,
    https_proxy: http,
    all_proxy: socks,
    NODE_USE_ENV_PROXY: '1',
  };
}

/** The variable names of proxyEnvironment(), which the carrier keeps for the program and its children. */
export const PROXY_VARIABLES: readonly string[] = Object.keys(proxyEnvironment());
