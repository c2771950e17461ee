#!/usr/bin/env bash
# Download the Go modules that tests/go/ pins (franz-go, IBM/sarama; go.mod and go.sum) through
# the Go module proxy the environment names (GOPROXY), into Go's module cache, so that the
# judges' build in tests/support/go_judges.py fetches nothing during the tests. Idempotent: a
# stamp holding go.sum's checksum makes a second run return at once. Needs the Go toolchain that
# go.mod names (the machine's; Debian's golang-go is too old), and says so when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
GO_DIR=tests/go
CACHE=.cache/go-judges
STAMP=$CACHE/.modules

if ! command -v go >/dev/null 2>&1; then
  wanted=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$GO_DIR/go.mod")
  echo "the franz-go and sarama judges (tests/go/) need Go $wanted or newer on PATH" >&2
  exit 1
fi
sum=$(cat "$GO_DIR/go.mod" "$GO_DIR/go.sum" | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$sum" ]; then
  exit 0
fi
mkdir -p "$CACHE"
echo "downloading the Go modules of $GO_DIR (franz-go, sarama)"
(cd "$GO_DIR" && GOFLAGS=-mod=mod go mod download)
echo "$sum" >"$STAMP"
