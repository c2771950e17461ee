#!/usr/bin/env bash
# Install the Debian packages the test suite needs (kcat), or say exactly what to install.
set -euo pipefail
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "roster's tests need: ${missing[*]}. Install with: sudo apt-get install ${missing[*]}" >&2
exit 1
