// The `ptc mcp` config's "approval" rules: which upstream tools wait for a person.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseMcpConfig } from '../../../../host/mcp/config.ts';
import { isGatedTool } from '../../../../host/mcp/approvals.ts';

const servers = { mcpServers: { repos: { command: 'node' }, docs: { command: 'node' } } };
const tool = (name: string, annotations?: object) => ({ name, inputSchema: { type: 'object' as const }, ...(annotations ? { annotations } : {}) });

test('destructiveHint: true is gated by default; a rule per upstream changes that', () => {
  const { approval } = parseMcpConfig({ ...servers, approval: { docs: ['publish'], repos: 'none' } }, 'servers.json');
  const defaults = parseMcpConfig(servers, 'servers.json').approval;
  assert.is(isGatedTool(defaults, 'repos', tool('delete', { destructiveHint: true })), true);
  assert.is(isGatedTool(defaults, 'repos', tool('list', { readOnlyHint: true })), false);
  assert.is(isGatedTool(defaults, 'repos', tool('archive')), false);
  assert.is(isGatedTool(approval, 'repos', tool('delete', { destructiveHint: true })), false);
  assert.is(isGatedTool(approval, 'docs', tool('publish')), true);
  assert.is(isGatedTool(approval, 'docs', tool('delete', { destructiveHint: true })), false);
  assert.is(isGatedTool(parseMcpConfig({ ...servers, approval: { docs: 'all' } }, 's').approval, 'docs', tool('read', { readOnlyHint: true })), true);
});

test('a bad rule names the field and the value', () => {
  assert.throws(() => parseMcpConfig({ ...servers, approval: { repos: 'sometimes' } }, 'servers.json'), /servers\.json: approval\.repos must be "destructive", "all", "none" or a list of tool names, got "sometimes"/);
  assert.throws(() => parseMcpConfig({ ...servers, approval: { ghost: 'all' } }, 'servers.json'), /servers\.json: approval\.ghost names no server of mcpServers \("repos", "docs"\)/);
  assert.throws(() => parseMcpConfig({ ...servers, approval: ['repos'] }, 'servers.json'), /servers\.json: approval must be an object of upstream names/);
});

test.run();
