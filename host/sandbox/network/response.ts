// A destination's answer on the HTTP forward path, read by hand rather than by node:http's client:
// the head is parsed once, and the body's framing (RFC 9112 §6) is followed over the raw reads, so
// the bytes of a body go on without an IncomingMessage stream in between. Errors carry a `code`
// that the proxy's 502 names, in node:http's style (HPE_...).

export type ResponseHead = { minor: 0 | 1; status: number; reason: string; rawHeaders: string[]; bytes: number };
export type Framing = { kind: 'none' } | { kind: 'length'; bytes: number } | { kind: 'chunked' } | { kind: 'close' };

const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: ([^\r\n]*))?$/;
const FIELD = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;
// RFC 9110 §5.5: a field value has no CR, LF or NUL.
const BAD_VALUE = /[\0\r\n]/;

function malformed(message: string, code = 'HPE_INVALID_RESPONSE'): Error {
  return Object.assign(new Error(`invalid response from the destination: ${message}`), { code });
}

/** The head at the start of `data`, undefined while its end has not arrived; throws on a malformed one or one over `maxBytes`. */
export function parseHead(data: Buffer, maxBytes: number): ResponseHead | undefined {
  const end = data.indexOf('\r\n\r\n');
  if ((end === -1 ? data.length : end + 4) > maxBytes) throw malformed(`the head is over ${maxBytes} bytes`, 'HPE_HEADER_OVERFLOW');
  if (end === -1) return undefined;
  const lines = data.toString('latin1', 0, end).split('\r\n');
  const status = STATUS_LINE.exec(lines[0]!);
  if (status === null) throw malformed(`bad status line ${JSON.stringify(lines[0]!.slice(0, 100))}`);
  const rawHeaders: string[] = [];
  for (const line of lines.slice(1)) {
    // RFC 9112 §5.2: a proxy may reject obsolete line folding; a field line is name: value.
    const field = FIELD.exec(line);
    if (field === null || BAD_VALUE.test(field[2]!)) throw malformed(`bad header line ${JSON.stringify(line.slice(0, 100))}`);
    rawHeaders.push(field[1]!, field[2]!);
  }
  return { minor: status[1] === '1' ? 1 : 0, status: Number(status[2]), reason: status[3] ?? '', rawHeaders, bytes: end + 4 };
}

/** The values of header `name` (lower case) in raw pairs. */
export function headerValues(rawHeaders: string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === name) values.push(rawHeaders[i + 1]!);
  return values;
}

/** How the body of `head` ends (RFC 9112 §6.3), for a request with `method`. */
export function framingOf(head: ResponseHead, method: string): Framing {
  if (method === 'HEAD' || head.status === 204 || head.status === 304 || head.status < 200) return { kind: 'none' };
  const encodings = headerValues(head.rawHeaders, 'transfer-encoding').flatMap((value) => value.split(',')).map((coding) => coding.trim().toLowerCase());
  if (encodings.length > 0) return encodings.at(-1) === 'chunked' ? { kind: 'chunked' } : { kind: 'close' };
  const lengths = new Set(headerValues(head.rawHeaders, 'content-length').flatMap((value) => value.split(',')).map((text) => text.trim()));
  if (lengths.size === 0) return { kind: 'close' };
  const [text] = lengths;
  if (lengths.size > 1 || !/^\d{1,15}$/.test(text!)) throw malformed(`bad content-length ${JSON.stringify([...lengths].join(', ').slice(0, 100))}`);
  return { kind: 'length', bytes: Number(text) };
}

/** Whether the connection may carry another request after this response. */
export function keepsAlive(head: ResponseHead, framing: Framing): boolean {
  if (framing.kind === 'close') return false;
  const tokens = headerValues(head.rawHeaders, 'connection').flatMap((value) => value.split(',')).map((token) => token.trim().toLowerCase());
  return head.minor === 1 ? !tokens.includes('close') : tokens.includes('keep-alive');
}

/** A chunk size line or trailer section longer than this is not HTTP. */
const MAX_LINE_BYTES = 16 * 1024;

/**
 * Follows chunked framing over the raw reads. feed() hands each piece of data (a view of the
 * read) to `data`, and returns how many bytes of the read the body took once its last chunk
 * and trailers are in, or undefined while more is to come. Trailers are dropped, as node:http's
 * piping did.
 */
export function createChunkedReader(): { feed(chunk: Buffer, data: (piece: Buffer) => void): number | undefined } {
  let state: 'size' | 'data' | 'data-end' | 'trailer' = 'size';
  let line = '';
  let remaining = 0;
  let trailerBytes = 0;
  return {
    feed(chunk, data) {
      let at = 0;
      while (at < chunk.length) {
        if (state === 'data') {
          const take = Math.min(remaining, chunk.length - at);
          data(chunk.subarray(at, at + take));
          at += take;
          remaining -= take;
          if (remaining === 0) state = 'data-end';
          continue;
        }
        const newline = chunk.indexOf(0x0a, at);
        const stop = newline === -1 ? chunk.length : newline + 1;
        line += chunk.toString('latin1', at, stop);
        at = stop;
        if (line.length > MAX_LINE_BYTES) throw malformed('a chunk line is too long');
        if (newline === -1) continue;
        if (!line.endsWith('\r\n')) throw malformed('a chunk line does not end in CRLF');
        const text = line.slice(0, -2);
        line = '';
        if (state === 'data-end') {
          if (text !== '') throw malformed('a chunk is longer than its size');
          state = 'size';
        } else if (state === 'size') {
          const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(text);
          if (size === null) throw malformed(`bad chunk size ${JSON.stringify(text.slice(0, 100))}`);
          remaining = Number.parseInt(size[1]!, 16);
          state = remaining === 0 ? 'trailer' : 'data';
        } else {
          trailerBytes += text.length + 2;
          if (trailerBytes > MAX_LINE_BYTES) throw malformed('the trailers are too long');
          if (text === '') return at;
        }
      }
      return undefined;
    },
  };
}
