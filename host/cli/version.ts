// How `ptc version` reads for a person: one fact a line, `name value`, so `grep` and `cut` work.
import type { VersionReport } from '../index.ts';

/** The report as lines of text. */
export function versionText(report: VersionReport): string {
  const { bootstrap, sandbox } = report;
  const lines = [`ptc ${report.ptc}`, `node ${report.node}`, `protocol ${report.protocol}`, `platform ${report.platform}`];
  if (bootstrap.source === 'embedded') lines.push(`bootstrap sha256 ${bootstrap.sha256} (embedded)`);
  else if (bootstrap.source === 'built') lines.push(`bootstrap sha256 ${bootstrap.sha256} (${bootstrap.path}, as the last build wrote it; this is the source, not a binary)`);
  else lines.push(`bootstrap not built (${bootstrap.path} is missing: "npm run build" writes it)`);
  const bwrap = sandbox.bwrap;
  const answer = bwrap.answer === 'cache' ? ', cached probe' : bwrap.answer === 'probe' ? ', probed now' : '';
  lines.push(`sandbox bwrap: ${bwrap.works ? `works (${bwrap.path}${answer})` : `unavailable (${bwrap.reason})`}`);
  const permission = sandbox['node-permission'];
  lines.push(`sandbox node-permission: ${permission.works ? 'works (partial: files and, on Node 25 or later, the network as a whole; no process isolation)' : `unavailable (${permission.reason})`}`);
  return `${lines.join('\n')}\n`;
}
