// Client capabilities forwarded to the upstreams: an upstream may ask its client to sample a
// model, elicit input from the user or list the roots. ptc is that client, but it has no model,
// no user and no roots of its own, so it offers upstreams exactly what its own client offered and
// passes each such request on to its own client, unchanged.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';

/** A person answers an elicitation: no deadline of ptc's own (the upstream has its own). */
const NO_TIMEOUT_MS = 2 ** 31 - 1;

/** The capabilities ptc forwards, each as ptc's own client declared it (sub-capabilities included). */
export function forwardedCapabilities(client: ClientCapabilities | undefined): ClientCapabilities {
  const declared: ClientCapabilities = {};
  if (client?.sampling !== undefined) declared.sampling = client.sampling;
  if (client?.elicitation !== undefined) declared.elicitation = client.elicitation;
  // Without listChanged: ptc does not forward its client's roots/list_changed.
  if (client?.roots !== undefined) declared.roots = {};
  return declared;
}

/** Answers an upstream's sampling, elicitation and roots requests by asking ptc's own client. */
export function forwardClientRequests(upstream: Client, server: Server, declared: ClientCapabilities): void {
  if (declared.sampling !== undefined) {
    upstream.setRequestHandler(CreateMessageRequestSchema, (request, extra) => server.createMessage(request.params, { signal: extra.signal, timeout: NO_TIMEOUT_MS }));
  }
  if (declared.elicitation !== undefined) {
    upstream.setRequestHandler(ElicitRequestSchema, (request, extra) => server.elicitInput(request.params, { signal: extra.signal, timeout: NO_TIMEOUT_MS }));
  }
  if (declared.roots !== undefined) {
    upstream.setRequestHandler(ListRootsRequestSchema, (_request, extra) => server.listRoots(undefined, { signal: extra.signal }));
  }
}
