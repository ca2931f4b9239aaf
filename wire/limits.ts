// What a string costs inside a JSON frame: its UTF-8 bytes after JSON escaping. The carrier uses
// it to cut error reports to fit one control message instead of sending a frame the host refuses.
const { apply } = Reflect;
const charCodeAt = String.prototype.charCodeAt;
const stringSlice = String.prototype.slice;

/** Bytes of one UTF-16 unit at `index` in a JSON string literal (a surrogate pair counts 4 on its high half, 0 on its low one). */
function unitBytes(text: string, index: number): number {
  const code = apply(charCodeAt, text, [index]) as number;
  if (code === 0x22 || code === 0x5c) return 2;
  if (code < 0x20) return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdbff) {
    const next = apply(charCodeAt, text, [index + 1]) as number;
    return next >= 0xdc00 && next <= 0xdfff ? 4 : 6;
  }
  if (code >= 0xdc00 && code <= 0xdfff) {
    const previous = index > 0 ? (apply(charCodeAt, text, [index - 1]) as number) : 0;
    return previous >= 0xd800 && previous <= 0xdbff ? 0 : 6;
  }
  return 3;
}

/** UTF-8 bytes of `text` as a JSON string literal, quotes included. */
export function escapedBytes(text: string): number {
  let total = 2;
  for (let index = 0; index < text.length; index++) total += unitBytes(text, index);
  return total;
}

/** The longest prefix of `text` whose JSON string literal fits `maxBytes`, never splitting a surrogate pair. */
export function cutToEscapedBytes(text: string, maxBytes: number): string {
  let total = 2;
  for (let index = 0; index < text.length; index++) {
    const bytes = unitBytes(text, index);
    if (total + bytes > maxBytes) {
      const unit = apply(charCodeAt, text, [index]) as number;
      // A low surrogate costs nothing by itself; cutting before it would split its pair.
      const end = unit >= 0xdc00 && unit <= 0xdfff && bytes === 0 ? index - 1 : index;
      return apply(stringSlice, text, [0, end]) as string;
    }
    total += bytes;
  }
  return text;
}
