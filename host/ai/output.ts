// A ptc run result as the AI SDK takes a tool's result: `toolOutput` is the JSON value execute
// returns (what the application keeps in its messages: images inlined, so it outlives the run's
// files), and `modelOutput` is what the model reads of it (toModelOutput): the output in order,
// then the value as lossless JSON text, or the failure as `ptc mcp` words it.
import { readFile } from 'node:fs/promises';
import type { JSONValue, Tool } from 'ai';
import { failureText, imageMediaType, jsonText, type EnvironmentReport, type Failure, type OutputEntry, type RunningLook, type RunResult, type SandboxReport } from '../index.ts';

/** The AI SDK's ToolResultOutput (the type `ai` does not export by name). */
type ToolResultOutput = Awaited<ReturnType<NonNullable<Tool<unknown, unknown>['toModelOutput']>>>;

export type OutputPart =
  | { type: 'text'; text: string }
  /** An image the program displayed: base64 data with its media type and size. */
  | { type: 'image'; mediaType: string; data: string; width: number; height: number };

interface Common {
  /** What the program printed and displayed, in order (consecutive text joined). */
  output: OutputPart[];
  sandbox: SandboxReport;
  environment?: EnvironmentReport;
}

export type CodeToolOutput =
  | (Common & {
      status: 'ok';
      /** The program's value as JSON; integers past 2^53 are doubles here, exact in valueText. */
      value?: JSONValue;
      /** The value as lossless JSON text: big integers exact, -0 kept. Absent when the program returned nothing. */
      valueText?: string;
      /** Why the program returned nothing, when its last expression was discarded. */
      hint?: string;
    })
  | (Common & { status: 'failed'; failure: Failure; /** The failure as the model reads it. */ failureText: string })
  /** The program is still running (the code tool's yieldAfterMs passed): its output since the last look; the wait tool looks again. */
  | { status: 'running'; runId: string; output: OutputPart[] };

/** The execute result of a run, or of a look at a run still going: JSON all through. */
export async function toolOutput(result: RunResult | RunningLook): Promise<CodeToolOutput> {
  const output = await outputParts(result.output);
  if (result.status === 'running') return { status: 'running', runId: result.runId, output };
  const common: Common = { output, sandbox: result.sandbox, ...(result.environment ? { environment: result.environment } : {}) };
  if (result.status === 'failed') return { ...common, status: 'failed', failure: result.failure, failureText: failureText(result.failure) };
  const ok: CodeToolOutput = { ...common, status: 'ok', ...(result.hint !== undefined ? { hint: result.hint } : {}) };
  if ('value' in result && result.value !== undefined) {
    const text = jsonText(result.value, { negativeZero: true }) ?? 'null';
    ok.valueText = text;
    ok.value = JSON.parse(text) as JSONValue;
  }
  return ok;
}

/** Output entries as parts: consecutive text joined (whichever stream it came from), images inlined. */
async function outputParts(entries: readonly OutputEntry[]): Promise<OutputPart[]> {
  const output: OutputPart[] = [];
  for (const entry of entries) {
    const last = output.at(-1);
    if (entry.type === 'text') {
      if (last?.type === 'text') last.text += entry.text;
      else output.push({ type: 'text', text: entry.text });
      continue;
    }
    try {
      const data = await readFile(entry.path);
      output.push({ type: 'image', mediaType: imageMediaType(data), data: data.toString('base64'), width: entry.width, height: entry.height });
    } catch (error) {
      output.push({ type: 'text', text: `[image ${entry.attachmentId} ${entry.width}x${entry.height}: ${entry.path} cannot be read: ${(error as Error).message}]\n` });
    }
  }
  return output;
}

/** What the model reads: text alone when there is no image (every provider takes text), else content parts. */
export function modelOutput(result: CodeToolOutput): ToolResultOutput {
  const parts: Array<{ type: 'text'; text: string } | { type: 'file'; mediaType: string; data: { type: 'data'; data: string } }> = [];
  // The model wrote this program against variables it no longer has: say so first (as ptc mcp does).
  const replaced = result.status === 'running' ? undefined : result.environment?.replaced;
  if (replaced !== undefined) parts.push({ type: 'text', text: `(${replaced}; this is a new environment and earlier variables are gone)` });
  for (const part of result.output) {
    if (part.type === 'text') parts.push({ type: 'text', text: part.text });
    else parts.push({ type: 'file', mediaType: part.mediaType, data: { type: 'data', data: part.data } });
  }
  if (result.status === 'running') {
    parts.push({ type: 'text', text: `(still running as runId ${JSON.stringify(result.runId)}: call the wait tool with {"runId": ${JSON.stringify(result.runId)}} for the output since this look and, once it ends, its result)` });
  } else if (result.status === 'ok') {
    if (result.valueText !== undefined) parts.push({ type: 'text', text: result.valueText });
    if (result.hint !== undefined) parts.push({ type: 'text', text: `(${result.hint})` });
    if (parts.length === 0) parts.push({ type: 'text', text: 'ok (no output, no value)' });
  } else {
    parts.push({ type: 'text', text: result.failureText });
  }
  if (parts.some((part) => part.type === 'file')) return { type: 'content', value: parts };
  // One text: each part on its own line, as the separate content items of ptc mcp read.
  const text = parts.map((part) => (part as { text: string }).text).reduce((all, next) => (all === '' || all.endsWith('\n') ? all + next : `${all}\n${next}`), '');
  return result.status === 'failed' ? { type: 'error-text', value: text } : { type: 'text', value: text };
}
