// Transport floor for the bench: reads newline-delimited JSON from fd 3 and writes each message
// back, parsed and re-encoded, on the same socket. No framing limits, no RPC, no validation.
import { Socket } from 'node:net';

const socket = new Socket({ fd: 3, readable: true, writable: true });
let pending = '';
socket.setEncoding('utf8');
socket.on('data', (chunk: string) => {
  pending += chunk;
  let newline: number;
  while ((newline = pending.indexOf('\n')) !== -1) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    socket.write(`${JSON.stringify(JSON.parse(line))}\n`);
  }
});
socket.on('end', () => process.exit(0));
