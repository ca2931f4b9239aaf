#!/usr/bin/env bash
# A throwaway OpenSSH server on 127.0.0.1 for the remote-carrier tests: its own host key, config,
# client key and known_hosts, all in one temporary directory; key authentication only, root
# permitted (the test machine is root). The remote cache goes in the same directory (SetEnv
# XDG_CACHE_HOME), so nothing is written outside it.
#
#   eval "$(bash test/helpers/sshd.sh start)"   # prints the PTC_TEST_SSH_* exports
#   bash test/helpers/sshd.sh stop              # stops it and removes the directory ($PTC_TEST_SSH_DIR)
set -euo pipefail

case "${1:-}" in
  start)
    dir=$(mktemp -d "${TMPDIR:-/tmp}/ptc-sshd-XXXXXX")
    chmod 700 "$dir"
    port=$(/usr/bin/node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    ssh-keygen -q -t ed25519 -N '' -C ptc-test-host -f "$dir/host_key"
    ssh-keygen -q -t ed25519 -N '' -C ptc-test-client -f "$dir/client_key"
    cp "$dir/client_key.pub" "$dir/authorized_keys"
    mkdir -p "$dir/cache"
    # sshd's privilege separation directory (Debian's sshd refuses to start without it).
    mkdir -p /run/sshd
    cat > "$dir/sshd_config" <<CONFIG
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers root
StrictModes no
UsePAM no
PrintMotd no
SetEnv XDG_CACHE_HOME=$dir/cache
# Every carrier is one channel of a shared connection; the suites keep many at once.
MaxSessions 200
MaxStartups 200:30:400
CONFIG
    echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$dir/host_key.pub")" > "$dir/known_hosts"
    cat > "$dir/ssh_config" <<CONFIG
Host *
  User root
  Port $port
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking yes
  LogLevel ERROR
CONFIG
    /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
    for _ in $(seq 1 100); do
      if ssh -F "$dir/ssh_config" -o BatchMode=yes root@127.0.0.1 true 2>/dev/null; then ready=1; break; fi
      sleep 0.1
    done
    if [ -z "${ready:-}" ]; then
      echo "sshd did not accept a connection on 127.0.0.1:$port; its log:" >&2
      cat "$dir/sshd.log" >&2 || true
      exit 1
    fi
    echo "export PTC_TEST_SSH_DIR=$dir"
    echo "export PTC_TEST_SSH_DESTINATION=root@127.0.0.1"
    echo "export PTC_TEST_SSH_PORT=$port"
    echo "export PTC_TEST_SSH_CONFIG=$dir/ssh_config"
    echo "export PTC_TEST_SSH_IDENTITY=$dir/client_key"
    ;;
  stop)
    dir="${2:-${PTC_TEST_SSH_DIR:-}}"
    [ -n "$dir" ] && [ -d "$dir" ] || { echo "sshd.sh stop: no PTC_TEST_SSH_DIR" >&2; exit 1; }
    if [ -f "$dir/sshd.pid" ]; then kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true; fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: bash test/helpers/sshd.sh start|stop" >&2
    exit 2
    ;;
esac
