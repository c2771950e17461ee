#!/usr/bin/env bash
# Install the Debian packages roster's tests and pipeline need — kcat, and Java 17+ for Spark —
# or say exactly what to install.
set -euo pipefail
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  missing+=(openjdk-17-jre-headless)
fi

[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "roster needs: ${missing[*]}. Install with: sudo apt-get install ${missing[*]}" >&2
echo "(Java 17 or newer runs Spark; kcat is used by the tests.)" >&2
exit 1
