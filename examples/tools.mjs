// Example bindings for `ptc run --bindings examples/tools.mjs`: an in-memory issue tracker and a
// chat tool, the kind of tools an agent would be given. Exported functions and objects of
// functions become bindings; `tracker` is a namespace (tracker.listIssues(...)).

const issues = [
  { id: 9007199254740993n, title: 'Crash when saving a file with an emoji name', labels: [], comments: 14, author: 'mira', body: 'Saving "🎉.txt" throws EILSEQ on Linux. Stack trace attached.' },
  { id: 9007199254740995n, title: 'Add dark mode', labels: ['enhancement'], comments: 3, author: 'tom', body: 'Would be nice to have a dark theme.' },
  { id: 9007199254740997n, title: 'Login fails after password reset', labels: [], comments: 22, author: 'ana', body: 'After resetting my password the login form returns 500. Regression since 2.3.' },
  { id: 9007199254740999n, title: 'Typo in README', labels: ['docs'], comments: 0, author: 'lee', body: 'recieve -> receive' },
  { id: 9007199254741001n, title: 'Memory leak in websocket reconnect loop', labels: [], comments: 9, author: 'sam', body: 'RSS grows by 40 MB an hour while the server is unreachable.' },
  { id: 9007199254741003n, title: 'Docs: explain the config file format', labels: [], comments: 1, author: 'kai', body: 'The docs do not say where config.json goes.' },
];

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export const tracker = {
  /** Lists issues, optionally only those without labels. */
  async listIssues({ unlabeled = false } = {}) {
    await delay(5);
    return issues
      .filter((issue) => !unlabeled || issue.labels.length === 0)
      .map(({ id, title, comments, labels }) => ({ id, title, comments, labels }));
  },
  /** Returns one issue with its body. */
  async getIssue(id) {
    await delay(5);
    const issue = issues.find((candidate) => candidate.id === BigInt(id));
    if (!issue) throw Object.assign(new Error(`no issue ${id}`), { code: 'NOT_FOUND' });
    return issue;
  },
  /** Adds labels to an issue and returns its new label list. */
  async addLabels(id, labels) {
    await delay(5);
    const issue = issues.find((candidate) => candidate.id === BigInt(id));
    if (!issue) throw Object.assign(new Error(`no issue ${id}`), { code: 'NOT_FOUND' });
    issue.labels = [...new Set([...issue.labels, ...labels])];
    return issue.labels;
  },
};

/** Posts a message to the team channel. */
export async function notify(channel, text) {
  await delay(5);
  return { channel, delivered: true, length: text.length };
}
