#!/usr/bin/env bash
# Install the Debian packages roster's tests and pipeline need — kcat, and Java 17+ for Spark —
# and those the old-client interop tests use — Go with sarama's sources (built offline), Burrow
# and ZooKeeper — or say exactly what to install.
set -euo pipefail
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  missing+=(openjdk-17-jre-headless)
fi

# Optional: without these the sarama, Burrow/ZooKeeper and chromium tests skip, saying why in
# the run's summary -- but not as root with apt-get (this script installs them there) nor with
# CI=true: there they fail (tests/support/needs.py), so a broken set-up never leaves CI green.
optional=()
command -v go >/dev/null 2>&1 || optional+=(golang-go)
command -v gcc >/dev/null 2>&1 || optional+=(gcc)  # sarama's zstd binding is cgo
[ -d /usr/share/gocode/src/github.com/Shopify/sarama ] || optional+=(golang-github-shopify-sarama-dev)
command -v Burrow >/dev/null 2>&1 || optional+=(burrow)
[ -f /usr/share/java/zookeeper.jar ] || optional+=(zookeeper)
# the console and report screenshot tests (tests/interop/test_console_browser.py) drive it
command -v chromium >/dev/null 2>&1 || optional+=(chromium)

wanted=("${missing[@]}" "${optional[@]}")
[ ${#wanted[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${wanted[*]} (Debian packages)"
  "$(dirname "$0")/apt-install.sh" "${wanted[@]}"
  exit 0
fi
if [ ${#optional[@]} -gt 0 ]; then
  echo "the sarama, Burrow and browser (chromium) tests will be skipped (and fail with" \
       "CI=true); to run them:" \
       "sudo apt-get install ${optional[*]}" >&2
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "roster needs: ${missing[*]}. Install with: sudo apt-get install ${missing[*]}" >&2
echo "(Java 17 or newer runs Spark; kcat is used by the tests.)" >&2
exit 1
