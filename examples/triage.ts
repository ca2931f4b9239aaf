// A triage pass an agent might write instead of calling tools one by one: fetch the unlabeled
// issues, classify them, label them in parallel, tell the team and return a summary.
type Issue = { id: bigint; title: string; body: string; comments: number; labels: string[] };

const rules: Array<[RegExp, string]> = [
  [/crash|fails|error|leak|500|regression/i, 'bug'],
  [/docs?|readme|typo/i, 'docs'],
  [/add|support|would be nice/i, 'enhancement'],
];

const open = await tracker.listIssues({ unlabeled: true });
inspect(`${open.length} unlabeled issues`);

const triaged: Array<{ id: bigint; title: string; label: string; urgent: boolean }> = [];
for (const summary of open) {
  const issue: Issue = await tracker.getIssue(summary.id);
  const text = `${issue.title}\n${issue.body}`;
  const label = rules.find(([pattern]) => pattern.test(text))?.[1] ?? 'needs-info';
  const urgent = label === 'bug' && issue.comments >= 10;
  triaged.push({ id: issue.id, title: issue.title, label, urgent });
  inspect(`  #${issue.id} ${urgent ? '[urgent] ' : ''}${label.padEnd(11)} ${issue.title}`);
}

await Promise.all(triaged.map(({ id, label, urgent }) => tracker.addLabels(id, urgent ? [label, 'urgent'] : [label])));

const urgent = triaged.filter((issue) => issue.urgent);
if (urgent.length > 0) {
  const receipt = await notify('#oncall', `Urgent: ${urgent.map((issue) => issue.title).join('; ')}`);
  inspect('notified #oncall:', receipt);
}

const byLabel = Object.groupBy(triaged, (issue) => issue.label);
return {
  labeled: triaged.length,
  byLabel: Object.fromEntries(Object.entries(byLabel).map(([label, list]) => [label, list!.length])),
  urgent: urgent.map((issue) => issue.id),
};
