// The byte path of the in-sandbox forwarder (network-forward.ts), as JavaScript source: it runs in
// the forwarder's worker thread, and `npm run bench` runs the same text in a process of its own to
// measure what a sandboxed fetch goes through. It defines forwardConnection(client, socketPath,
// onAnswer): the client's bytes are piped to the proxy's Unix socket; the proxy's bytes are read
// into a buffer of the forwarder's own (net's `onread`) and written straight to the client, with no
// stream push and pipe per chunk and no new buffer per read while the writes leave at once. onAnswer
// sees the proxy's first read. Needs `connect` from node:net in scope.
export const FORWARD_CONNECTION = `
const READ_BYTES = 64 * 1024;
function forwardConnection(client, socketPath, onAnswer) {
  let buffer = Buffer.allocUnsafe(READ_BYTES);
  let first = true;
  const resume = () => upstream.resume();
  const upstream = connect({ path: socketPath, onread: { buffer: () => buffer, callback(bytes, filled) {
    const chunk = filled.subarray(0, bytes);
    if (first) { first = false; onAnswer(chunk); }
    client.write(chunk);
    // Still queued: that buffer is the write's until it completes.
    if (client.writableLength > 0) buffer = Buffer.allocUnsafe(READ_BYTES);
    if (!client.writableNeedDrain) return true;
    client.once('drain', resume);
    return false;
  } } });
  const end = () => { client.destroy(); upstream.destroy(); };
  client.on('error', end).on('close', end);
  upstream.on('error', end).on('close', end);
  upstream.once('end', () => client.end());
  client.pipe(upstream);
  return upstream;
}
`;
