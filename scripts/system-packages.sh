#!/usr/bin/env bash
# The system packages the tests use, installed when missing and we are root: git, nginx,
# haproxy, postgresql (the tests start their own servers as child processes on private ports),
# buildah and debootstrap (the container image test), chromium (the dashboard, rendered
# headless). The packages' own daemons are never
# started (policy-rc.d says no while apt-get runs), and a service already on this machine is
# never stopped, disabled or reconfigured.
set -euo pipefail
POLICY_RC_D=${POLICY_RC_D:-/usr/sbin/policy-rc.d}

need=()
for bin in git nginx haproxy buildah debootstrap chromium; do command -v "$bin" >/dev/null || need+=("$bin"); done
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
((${#need[@]})) || exit 0
if [ "$(id -u)" != 0 ]; then
  echo "setup: please install: ${need[*]} (the tests start their own servers; none need to run)" >&2
  exit 0
fi
echo "setup: installing ${need[*]} (their daemons are not started)"
if [ ! -e "$POLICY_RC_D" ]; then  # one already there is the machine's own: left as it is
  printf '#!/bin/sh\n# reviewbot set-up: no daemon starts while packages install\nexit 101\n' \
    > "$POLICY_RC_D"
  chmod 755 "$POLICY_RC_D"
  trap 'rm -f "$POLICY_RC_D"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
# a fresh cloud machine runs unattended-upgrades at boot: wait for its lock (bounded), not fail
LOCK_WAIT=${REVIEWBOT_APT_LOCK_WAIT:-600}
if fuser /var/lib/dpkg/lock-frontend /var/lib/apt/lists/lock >/dev/null 2>&1; then
  echo "setup: another package manager holds the apt lock; waiting up to ${LOCK_WAIT}s for it"
fi
apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT" update -qq
apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT" install -y -qq --no-install-recommends \
  "${need[@]}" >/dev/null
