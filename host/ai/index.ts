// `ptc/ai`: code mode for AI SDK agents (see code-tool.ts). `ai` is a peer dependency of this
// entry alone: the core library, the binary and the other front ends never load it.
// First, so that an older Node is refused by version before any module that needs a newer one evaluates.
import '../require-node.ts';
export { codeTool, type CodeTool, type CodeToolOptions, type CodeToolOutput, type StateOwnerOption, type WaitInput } from './code-tool.ts';
export type { OutputPart } from './output.ts';
