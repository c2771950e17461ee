#!/usr/bin/env bash
# Download the Go modules that tests/go/ pins (franz-go, IBM/sarama; go.mod and go.sum) through
# the Go module proxy the environment names (GOPROXY) into Go's module cache, and compile them,
# so that the judges' build in tests/support/go_judges.py fetches nothing and mostly links.
# Idempotent: a stamp holding go.mod's and go.sum's checksum makes a second run return at once. Needs the Go toolchain that
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
echo "downloading and compiling the Go modules of $GO_DIR (franz-go, sarama)"
# compiling them here fills Go's build cache, so the tests' build only links (about a minute
# of two cores otherwise); CGO_ENABLED as go_judges.py builds
(cd "$GO_DIR" && GOFLAGS=-mod=mod go mod download && GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build ./...)
echo "$sum" >"$STAMP"
