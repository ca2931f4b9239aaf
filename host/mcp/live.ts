// The upstreams as the server sees them over a session: started once ptc's own client has said
// what it supports (so the upstreams are offered the same), described afresh whenever one comes
// up, goes down or changes its tools, and announced to the client with tools/list_changed.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamConfig } from './config.ts';
import { forwardedCapabilities } from './client-requests.ts';
import { startUpstreams, type Upstream } from './upstreams.ts';

export interface Live<Catalog> {
  /** The catalog of the upstreams as they are now; the first call waits for their start (bounded). */
  current(): Promise<Catalog>;
  /** The upstreams, once their start is over (bounded as for current()). */
  upstreams(): Promise<Upstream[]>;
  close(): Promise<void>;
}

/**
 * Starts the upstreams on the client's `initialized` (or its first request, if it sends none)
 * and keeps `describe`'s catalog of them current. `describe` gets ptc's client's capabilities.
 */
export function liveUpstreams<Catalog extends { description: string }>(
  server: Server,
  configs: Map<string, UpstreamConfig>,
  describe: (upstreams: Upstream[], client: ClientCapabilities | undefined) => Catalog,
): Live<Catalog> {
  let running: { upstreams: Upstream[]; started: Promise<void> } | undefined;
  let catalog: Catalog | undefined;
  let listed = false;
  let pending = false;
  let closed = false;

  const rebuild = (): Catalog => (catalog = describe(running!.upstreams, server.getClientCapabilities()));
  // Changes come in bursts (an upstream that floods list_changed): one rebuild per turn.
  const changed = (): void => {
    if (pending || closed) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      if (closed || catalog === undefined) return;
      const before = catalog.description;
      if (rebuild().description !== before && listed) server.sendToolListChanged().catch(() => {});
    });
  };
  const start = (): { upstreams: Upstream[]; started: Promise<void> } => {
    running ??= startUpstreams(configs, {
      capabilities: forwardedCapabilities(server.getClientCapabilities()),
      server,
      onChange: changed,
      onListChanged: (kind) => {
        if (closed) return;
        void (kind === 'resources' ? server.sendResourceListChanged() : server.sendPromptListChanged()).catch(() => {});
      },
    });
    return running;
  };
  const initialized = server.oninitialized;
  server.oninitialized = () => {
    initialized?.();
    start();
  };

  return {
    async current() {
      await start().started;
      listed = true;
      return catalog ?? rebuild();
    },
    async upstreams() {
      const { upstreams, started } = start();
      await started;
      return upstreams;
    },
    async close() {
      closed = true;
      if (running !== undefined) await Promise.all(running.upstreams.map((upstream) => upstream.close()));
    },
  };
}
