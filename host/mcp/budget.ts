// How long the run_code description may be. Past the budget it declares only search() and
// describe() and lists the namespaces, and programs find the rest inside the run.

/**
 * The default --description-budget, in characters: about 10,000 tokens at 4 characters a token,
 * where Anthropic's tool search guidance draws the line past which tool definitions are better
 * searched than loaded into every request.
 */
export const DEFAULT_DESCRIPTION_BUDGET = 40_000;

export interface McpServerOptions {
  /** Characters the run_code description may take; past it, namespaces are listed and programs search. @default 40000 */
  descriptionBudget?: number;
  /** The directory programs run in (`--cwd`). @default the directory ptc mcp was started in */
  cwd?: string;
}

export const OVER_BUDGET_FIRST_LINE = 'Run a TypeScript program that calls the tools of the MCP servers below, which are too many to declare here: find them with search() and describe().';
