#!/usr/bin/env bash
# Throwaway Podman containers for the container-carrier tests (PTC_TEST_LAUNCH=podman and
# test/integration/podman.test.ts): the far side of `launch: { kind: 'command', command: ['podman',
# 'exec', '-i', <container>] }`. Nothing is pulled: each container's root file system is a
# directory made here (empty /etc, /tmp, /proc…, the bootstrap at /opt/ptc/bootstrap.mjs), with
# the host's own /usr bound in read-only, so its Node, bubblewrap and curl are the host's.
#
#   eval "$(bash test/helpers/podman.sh start)"   # prints the PTC_TEST_PODMAN_* exports
#   bash test/helpers/podman.sh stop              # removes the containers and $PTC_TEST_PODMAN_DIR
#
# Started as root it makes three: one of root's own (PTC_TEST_PODMAN_COMMAND), the same with
# podman's default capabilities (PTC_TEST_PODMAN_PLAIN_COMMAND), and a rootless one of the user ptc-podman (PTC_TEST_PODMAN_ROOTLESS_COMMAND, made with its /etc/subuid range when
# missing; the host, still root, reaches it through setpriv). Started as another user, only that
# user's rootless one. Each has:
#   --init                    a pid 1 that reaps, as a container's init should (sleep would not);
#   --network none            only loopback: the host's servers are reachable only through the relay;
#   --cap-add SYS_ADMIN,NET_ADMIN
#                             bubblewrap, run by the container's root, makes its namespaces and
#                             mounts and brings up their loopback with these (without them its
#                             probe fails "Creating new namespace failed"; podman.test.ts shows it);
#   /var/tmp bound in         the suites' workspaces (/var/tmp/ptc-*) are cwds on both sides;
#   the repository's path     an empty directory, because a run's default cwd is the host's;
#   /workspace                an empty directory (mode 1777) for runs that name their own cwd.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
ROOTLESS_USER=ptc-podman
BOOTSTRAP=/opt/ptc/bootstrap.mjs

# The argv prefix that runs a command as `user` (from root) with a plain environment; none for this user.
as_prefix() {
  local user=$1 home
  if [ -z "$user" ] || [ "$(id -un)" = "$user" ]; then return 0; fi
  home=$(getent passwd "$user" | cut -d: -f6)
  printf '%s\n' setpriv --reuid="$user" --regid="$user" --init-groups -- env -i "HOME=$home" "USER=$user" "LOGNAME=$user" PATH=/usr/local/bin:/usr/bin:/bin
}

# Runs "$@" as `user`.
as() {
  local user=$1 prefix
  shift
  mapfile -t prefix < <(as_prefix "$user")
  "${prefix[@]}" "$@"
}

# crun (1.8) refuses to start a container on a hybrid cgroup layout (cgroup v1 controllers plus a
# cgroup2 at /sys/fs/cgroup/unified) whose cgroup2 holds any controller ("cgroups in hybrid mode
# not supported, drop all controllers from cgroupv2"), as on a machine that is itself a container
# with hugetlb there. The workaround: start podman in a private mount namespace with that cgroup2
# unmounted, so crun sees plain cgroup v1. Only `podman run` needs it (a rootless user's first
# podman command also makes the pause process whose namespaces later commands join, so that is
# `podman run` here too); `podman exec` works from the host's namespace.
hybrid_cgroups() {
  [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = tmpfs ] &&
    [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] &&
    [ -n "$(tr -d '[:space:]' < /sys/fs/cgroup/unified/cgroup.controllers)" ]
}

# podman run for root asks crun for RLIMIT_NOFILE 1048576 and a larger RLIMIT_NPROC than it has,
# which needs CAP_SYS_RESOURCE; a machine without it (a container) gets "crun: setrlimit
# `RLIMIT_NOFILE`: Operation not permitted". Then the container gets this shell's hard limits, the
# process count at most 32768: podman 4.3 sets its own RLIMIT_NPROC to 32768 (strace shows the
# setrlimit) before it starts crun, which cannot raise it again. A rootless podman keeps the limits
# it has.
ulimit_args() {
  local user=$1 capeff
  [ -z "$user" ] && [ "$(id -u)" = 0 ] || return 0
  capeff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
  # CAP_SYS_RESOURCE is capability 24.
  if (( (16#$capeff >> 24) & 1 )); then return 0; fi
  local nofile nproc
  nofile=$(ulimit -Hn)
  nproc=$(ulimit -Hu)
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  echo "--ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc"
}

# The root file system of one container, owned by `user` (a rootless podman maps its own uid to root).
make_rootfs() {
  local rootfs=$1 user=$2 name
  mkdir -p "$rootfs"/{usr,etc,proc,dev,sys,tmp,run,root,var/tmp,opt/ptc,workspace} "$rootfs$repo"
  # The host's / layout: merged-/usr links as links (Debian 12: /bin -> usr/bin), anything else bound below.
  for name in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$name" ]; then ln -s "$(readlink "/$name")" "$rootfs/$name"; fi
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
  cp "$repo/dist/bootstrap.mjs" "$rootfs$BOOTSTRAP"
  chmod 755 "$rootfs"
  chmod 1777 "$rootfs/tmp" "$rootfs/workspace"
  if [ -n "$user" ] && [ "$(id -un)" != "$user" ]; then chown -R "$user:$user" "$rootfs"; fi
}

# Starts container `name` for `user` ("" for this user), printing nothing; fails with podman's words.
start_container() {
  local name=$1 user=$2 rootfs=$3 caps=${4-"--cap-add SYS_ADMIN,NET_ADMIN"} binds="" dir
  make_rootfs "$rootfs" "$user"
  for dir in bin sbin lib lib32 lib64 libx32; do
    if [ -d "/$dir" ] && [ ! -L "/$dir" ]; then binds="$binds -v /$dir:/$dir:ro"; fi
  done
  # shellcheck disable=SC2046,SC2086
  local run=(podman run -d --name "$name" --init --network none $caps
    $(ulimit_args "$user") -v /usr:/usr:ro $binds -v /var/tmp:/var/tmp --rootfs "$rootfs" /usr/bin/sleep infinity)
  local out prefix
  mapfile -t prefix < <(as_prefix "$user")
  if hybrid_cgroups; then
    [ "$(id -u)" = 0 ] || { echo "podman.sh: this machine's cgroups are hybrid with controllers in its cgroup2, which crun refuses; only root can start podman around that" >&2; return 1; }
    out=$(unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified && exec "$@"' sh "${prefix[@]}" "${run[@]}" 2>&1) ||
      { echo "podman.sh: podman run for ${user:-$(id -un)} failed: $out" >&2; return 1; }
  else
    out=$("${prefix[@]}" "${run[@]}" 2>&1) || { echo "podman.sh: podman run for ${user:-$(id -un)} failed: $out" >&2; return 1; }
  fi
  # The container answers once its Node runs the bootstrap.
  out=$(as "$user" podman exec -i "$name" /usr/bin/node "$BOOTSTRAP" --probe 2>&1) || { echo "podman.sh: the container $name does not run the bootstrap: $out" >&2; return 1; }
}

json_command() {
  local first=1 word
  printf '['
  for word in "$@"; do
    [ $first = 1 ] || printf ','
    first=0
    printf '"%s"' "$word"
  done
  printf ']'
}

case "${1:-}" in
  start)
    command -v podman >/dev/null || { echo "podman.sh: podman is not installed (apt-get install podman uidmap slirp4netns fuse-overlayfs)" >&2; exit 1; }
    [ -f "$repo/dist/bootstrap.mjs" ] || { echo "podman.sh: $repo/dist/bootstrap.mjs is missing (npm run build)" >&2; exit 1; }
    dir=$(mktemp -d "${TMPDIR:-/tmp}/ptc-podman-XXXXXX")
    chmod 755 "$dir"
    tag=$(basename "$dir" | tr 'A-Z' 'a-z')
    trap 'bash "$0" stop "$dir" >/dev/null 2>&1 || true' ERR
    if [ "$(id -u)" = 0 ]; then
      start_container "$tag-root" "" "$dir/root"
      echo "export PTC_TEST_PODMAN_COMMAND='$(json_command podman exec -i "$tag-root")'"
      # The same without the added capabilities, as `podman run` makes a container by default.
      start_container "$tag-plain" "" "$dir/plain" ""
      echo "export PTC_TEST_PODMAN_PLAIN_COMMAND='$(json_command podman exec -i "$tag-plain")'"
      if ! getent passwd "$ROOTLESS_USER" >/dev/null; then
        # Debian's useradd gives the new user a /etc/subuid and /etc/subgid range (login.defs SUB_UID_*).
        useradd --create-home --user-group --shell /bin/sh "$ROOTLESS_USER"
      fi
      grep -q "^$ROOTLESS_USER:" /etc/subuid && grep -q "^$ROOTLESS_USER:" /etc/subgid ||
        { echo "podman.sh: $ROOTLESS_USER has no range in /etc/subuid and /etc/subgid (usermod --add-subuids/--add-subgids)" >&2; exit 1; }
      rootless=$ROOTLESS_USER
    else
      rootless=$(id -un)
    fi
    echo "$rootless" > "$dir/rootless-user"
    start_container "$tag-rootless" "$rootless" "$dir/rootless"
    mapfile -t prefix < <(as_prefix "$rootless")
    echo "export PTC_TEST_PODMAN_ROOTLESS_COMMAND='$(json_command "${prefix[@]}" podman exec -i "$tag-rootless")'"
    echo "export PTC_TEST_PODMAN_DIR=$dir"
    echo "export PTC_TEST_PODMAN_BOOTSTRAP=$BOOTSTRAP"
    ;;
  stop)
    dir="${2:-${PTC_TEST_PODMAN_DIR:-}}"
    [ -n "$dir" ] && [ -d "$dir" ] || { echo "podman.sh stop: no PTC_TEST_PODMAN_DIR" >&2; exit 1; }
    tag=$(basename "$dir" | tr 'A-Z' 'a-z')
    if [ "$(id -u)" = 0 ]; then
      podman rm -f -t 0 "$tag-root" >/dev/null 2>&1 || true
      podman rm -f -t 0 "$tag-plain" >/dev/null 2>&1 || true
    fi
    if [ -f "$dir/rootless-user" ]; then
      rootless=$(cat "$dir/rootless-user")
      as "$rootless" podman rm -f -t 0 "$tag-rootless" >/dev/null 2>&1 || true
      # The pause process of ptc-podman's podman holds that user's namespaces. It goes too (the user
      # is this script's own), so the next start makes it again, inside the cgroup workaround.
      if [ "$(id -u)" = 0 ] && [ "$rootless" = "$ROOTLESS_USER" ]; then
        pause="/tmp/podman-run-$(id -u "$rootless")/libpod/tmp/pause.pid"
        if [ -f "$pause" ]; then kill "$(cat "$pause")" 2>/dev/null || true; fi
      fi
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: bash test/helpers/podman.sh start|stop" >&2
    exit 2
    ;;
esac
