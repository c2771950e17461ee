#!/usr/bin/env bash
# apt-get install the Debian packages named, as root. make test resolves its dependencies side
# by side (Makefile, deps), and dpkg lets one apt-get run at a time: the scripts that install
# packages take turns on one lock file instead of failing on dpkg's.
set -euo pipefail
exec 9>/run/lock/roster-apt.lock
flock 9
# another package manager (unattended-upgrades, a neighbour's apt) may hold dpkg's lock: wait
apt-get -o DPkg::Lock::Timeout=300 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null
