// What of the host a bubblewrap sandbox sees besides its own paths (docs/host-view.md): the
// system directories a Node carrier and common command-line tools run from, and from /etc only
// the files they read. Everything else of the host (homes, /root, /etc/shadow, /etc/ssh, /var,
// /srv, /mnt, /opt) is absent from the sandbox's fresh root, not merely unwritable. Read from
// the machine the carrier runs on (host or relay) at each launch; bwrap.ts turns it into argv.
import { lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { within, type SystemEntry } from './bwrap.ts';

/** Where programs and their libraries live; on merged-/usr systems all but /usr are symlinks. */
export const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The files of /etc a program may need, each for a reason (docs/host-view.md repeats them). */
export const ETC_ENTRIES = [
  // User and group names for uids (ls -l, id, whoami, os.userInfo()); no passwords live here.
  '/etc/passwd', '/etc/group',
  // Name resolution: the order of sources, static names, the resolver and getaddrinfo's settings.
  // resolv.conf's target under /run comes back only with the network (resolver.ts).
  '/etc/nsswitch.conf', '/etc/hosts', '/etc/host.conf', '/etc/resolv.conf', '/etc/gai.conf',
  // Port and protocol names (getservbyname, Python's socket module).
  '/etc/services', '/etc/protocols',
  // TLS trust for curl, git, Python and OpenSSL (Debian and Fedora layouts); never ssl/private.
  '/etc/ssl/certs', '/etc/ssl/openssl.cnf', '/etc/ca-certificates', '/etc/ca-certificates.conf', '/etc/pki/tls/certs', '/etc/pki/tls/openssl.cnf', '/etc/pki/ca-trust',
  // Local time for date, Intl and Python.
  '/etc/localtime', '/etc/timezone',
  // The dynamic linker finds libraries outside its default paths only through its cache.
  '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d',
  // Debian's /usr/bin links (awk, editor, python and others) go through /etc/alternatives.
  '/etc/alternatives',
  // What system this is (platform detection in Python, npm packages and shells).
  '/etc/os-release', '/etc/lsb-release', '/etc/debian_version',
  // File types by extension (Python's mimetypes, servers a program starts).
  '/etc/mime.types',
  // The mount table some tools read (df), a link into the sandbox's own /proc.
  '/etc/mtab',
];

/** Debian's Python reads its configuration here and imports its sitecustomize (a link in /usr/lib/python3.*). */
const PYTHON_ETC = /^python3(\.\d+)?$/;

/** The directories whose contents the sandbox sees whole: a link into them stays a link. */
const LINKABLE = [...SYSTEM_DIRECTORIES, '/run'];

/** The system entries that exist on this machine: directories and files bound, symlinks kept as
 * symlinks (an /etc link pointing elsewhere is bound as its target's content instead). */
export function systemEntries(): SystemEntry[] {
  const entries: SystemEntry[] = [];
  for (const path of [...SYSTEM_DIRECTORIES, ...ETC_ENTRIES, ...pythonEtc()]) {
    const entry = systemEntry(path);
    if (entry !== undefined) entries.push(entry);
  }
  return entries;
}

function systemEntry(path: string): SystemEntry | undefined {
  let isLink: boolean;
  try {
    isLink = lstatSync(path).isSymbolicLink();
  } catch {
    return undefined;
  }
  if (!isLink) return { path, kind: 'bind' };
  // /bin -> usr/bin, /etc/localtime -> /usr/share/zoneinfo/...: the target is in the sandbox too.
  const target = readlinkSync(path);
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    // Dangling on the host: dangling inside as well, so a read fails as it would outside.
    return { path, kind: 'symlink', target };
  }
  // Into /proc (/etc/mtab -> ../proc/self/mounts) as written: resolved here it would name this process.
  if (within(real, '/proc')) return { path, kind: 'symlink', target };
  if (LINKABLE.some((root) => within(real, root))) return { path, kind: 'symlink', target: real };
  // A link to somewhere the sandbox does not show (/etc/resolv.conf -> /var/lib/...): its content.
  return { path, kind: 'bind', source: real };
}

function pythonEtc(): string[] {
  try {
    return readdirSync('/etc').filter((name) => PYTHON_ETC.test(name)).sort().map((name) => `/etc/${name}`);
  } catch {
    return [];
  }
}
