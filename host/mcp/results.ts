// Translations at the two MCP edges: an upstream tools/call result into the value a program
// receives, and a ptc run result into the run_code tool's result.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeJson } from '../../wire/decode.ts';
import { encodeJson } from '../../wire/json.ts';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { failureText, image, imageMediaType, jsonText, type ImageRef, type OutputEntry, type RunResult } from '../index.ts';
import { UpstreamError } from './upstreams.ts';
import { privateDirectory } from '../../supervision/host-temp.ts';

// A Map, so an upstream's mimeType "constructor" or "__proto__" finds nothing.
const EXTENSIONS = new Map([['image/png', 'png'], ['image/jpeg', 'jpg'], ['image/gif', 'gif'], ['image/webp', 'webp']]);

/**
 * A private directory for one run's upstream images: `image()` hands the program a file, and
 * the files go when the run ends (or, if this host is killed, with its host directory).
 */
export class RunFiles {
  #dir: Promise<string> | undefined;
  #count = 0;

  async writeImage(base64: string, mimeType: string): Promise<ImageRef> {
    const extension = EXTENSIONS.get(mimeType);
    if (extension === undefined) throw new UpstreamError(`upstream returned an image of type ${JSON.stringify(mimeType)}; programs take PNG, JPEG, GIF or WebP`, 'UPSTREAM_IMAGE_TYPE');
    this.#dir ??= Promise.resolve().then(() => privateDirectory('mcp'));
    const path = join(await this.#dir, `image-${++this.#count}.${extension}`);
    await writeFile(path, Buffer.from(base64, 'base64'), { mode: 0o600 });
    return image(path);
  }

  async remove(): Promise<void> {
    if (this.#dir !== undefined) await rm(await this.#dir, { recursive: true, force: true });
  }
}

/**
 * The value a program gets from an upstream call: structuredContent when present (an image
 * content block inside it as an Image); else each content item (a text parsed as JSON when it
 * parses, an image as an Image, audio with its data), alone when there is one. JSON is read
 * losslessly: an integer past 2^53 arrives as a bigint. isError becomes a thrown error, so the
 * program sees a BindingError.
 */
export async function upstreamValue(result: CallToolResult, files: RunFiles): Promise<unknown> {
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError === true) {
    const text = content.filter((item) => item.type === 'text').map((item) => item.text).join('\n') || 'the tool reported an error';
    throw new UpstreamError(text, 'UPSTREAM_TOOL_ERROR');
  }
  if (result.structuredContent !== undefined) return withImages(result.structuredContent, files);
  const items: unknown[] = [];
  for (const item of content) {
    if (item.type === 'text') items.push(parsedText(item.text));
    else if (item.type === 'image') items.push(await files.writeImage(item.data, item.mimeType));
    else if (item.type === 'audio') items.push({ type: 'audio', data: item.data, mimeType: item.mimeType });
    else if (item.type === 'resource') items.push({ type: 'resource', ...item.resource });
    else if (item.type === 'resource_link') items.push({ type: 'resource_link', uri: item.uri, name: item.name, ...(item.mimeType ? { mimeType: item.mimeType } : {}) });
    else {
      const other = item as { type: string; mimeType?: unknown };
      items.push({ type: other.type, ...('mimeType' in other ? { mimeType: other.mimeType } : {}) });
    }
  }
  return items.length === 1 ? items[0] : items;
}

function parsedText(text: string): unknown {
  try {
    return decodeJson(text);
  } catch {
    return text;
  }
}

/**
 * structuredContent with each image content block in it (`{type: "image", data, mimeType}`, as
 * server-filesystem's read_media_file returns) made an Image, so it reaches the program as one
 * whichever half of the result it is read from. Iterative: the upstream chooses the depth.
 */
async function withImages(structured: Record<string, unknown>, files: RunFiles): Promise<unknown> {
  const pending: Array<Record<string, unknown> | unknown[]> = [structured];
  while (pending.length > 0) {
    const holder = pending.pop()!;
    for (const key of Object.keys(holder)) {
      const value = (holder as Record<string, unknown>)[key];
      if (typeof value !== 'object' || value === null) continue;
      if (isImageBlock(value)) {
        Object.defineProperty(holder, key, { value: await files.writeImage(value.data, value.mimeType), writable: true, enumerable: true, configurable: true });
      } else {
        pending.push(value as Record<string, unknown>);
      }
    }
  }
  return structured;
}

function isImageBlock(value: object): value is { type: 'image'; data: string; mimeType: string } {
  const { type, data, mimeType } = value as Record<string, unknown>;
  return Object.hasOwn(value, 'type') && type === 'image' && typeof data === 'string' && typeof mimeType === 'string' && EXTENSIONS.has(mimeType);
}

/**
 * The run_code result: output in order (consecutive text joined, images as image content), then
 * the value as JSON text (or the hint of a program that returned nothing), or on failure the
 * kind and message with isError. structuredContent carries the ptc result without its output,
 * which the content holds already and which would count twice against the client's context
 * (big integers and -0 exact in the text, as doubles there).
 */
export async function toolResult(result: RunResult): Promise<CallToolResult> {
  const content: CallToolResult['content'] = [];
  // The model wrote this program against variables it no longer has; say so first (as `ptc repl` does).
  const replaced = result.environment?.replaced;
  if (replaced !== undefined) content.push({ type: 'text', text: `(${replaced}; this is a new environment and earlier variables are gone)` });
  const notes = content.length;
  content.push(...await outputContent(result.output));
  const { output: _output, ...rest } = result;
  const structuredContent = JSON.parse(jsonText(rest) ?? '{}') as Record<string, unknown>;
  if (result.status === 'ok') {
    if ('value' in result && result.value !== undefined) content.push({ type: 'text', text: encodeJson(result.value, 'value') });
    // The model reads the content, not structuredContent: a program that forgot its `return` learns it here.
    if (result.hint !== undefined) content.push({ type: 'text', text: `(${result.hint})` });
    if (content.length === notes) content.push({ type: 'text', text: 'ok (no output, no value)' });
    return { content, structuredContent };
  }
  content.push({ type: 'text', text: failureText(result.failure) });
  return { content, structuredContent, isError: true };
}

/** A run's output as content: consecutive text joined (whichever stream it came from), images as image content. */
export async function outputContent(output: readonly OutputEntry[]): Promise<CallToolResult['content']> {
  const content: CallToolResult['content'] = [];
  for (const entry of output) {
    const last = content.at(-1);
    if (entry.type === 'text') {
      if (last?.type === 'text') last.text += entry.text;
      else content.push({ type: 'text', text: entry.text });
    } else {
      content.push(await imageContent(entry));
    }
  }
  return content;
}

async function imageContent(entry: Extract<OutputEntry, { type: 'image' }>): Promise<CallToolResult['content'][number]> {
  try {
    const data = await readFile(entry.path);
    return { type: 'image', data: data.toString('base64'), mimeType: imageMediaType(data) };
  } catch (error) {
    return { type: 'text', text: `[image ${entry.attachmentId} ${entry.width}x${entry.height}: ${entry.path} cannot be read: ${(error as Error).message}]\n` };
  }
}
