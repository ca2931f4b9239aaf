// The one error class of the build: its message is printed as is, without a stack.
export class BuildError extends Error {}
