#!/usr/bin/env bash
# franz-go's own integration tests (pkg/kgo, at the version tests/go/go.mod pins), written for
# Apache Kafka, run against a fresh `roster serve` on a free port: a client's suite nobody here
# wrote (docs/testing.md, "Other projects' suites"). KGO_TEST_RECORDS (default 20000) sizes its
# ETL tests; KGO_ARGS goes to the test binary (e.g. KGO_ARGS='-test.run TestTxnEtl -test.v').
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
scripts/ensure-go-modules.sh
BIN=$ROOT/.cache/go-judges/kgo.test
(cd tests/go && GOFLAGS="-mod=mod -buildvcs=false" go test -c -o "$BIN" github.com/twmb/franz-go/pkg/kgo)
# its tests read their package's sources (config.go): run from the module's own folder
PKG=$(cd tests/go && go list -m -f '{{.Dir}}' github.com/twmb/franz-go)/pkg/kgo

WORK=$(mktemp -d)
PORT=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/python -m roster serve --port "$PORT" --data-dir "$WORK/data" >"$WORK/roster.log" 2>&1 &
ROSTER=$!
trap 'kill $ROSTER 2>/dev/null; wait $ROSTER 2>/dev/null; rm -rf "$WORK"' EXIT
# the broker says when it listens; give up with its log if it exits or takes over a minute
for _ in $(seq 600); do
  grep -q "roster listening" "$WORK/roster.log" && break
  kill -0 $ROSTER 2>/dev/null || { cat "$WORK/roster.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "roster listening" "$WORK/roster.log" || { cat "$WORK/roster.log" >&2; exit 1; }

cd "$PKG"
KGO_SEEDS=127.0.0.1:$PORT KGO_TEST_RF=1 KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-20000} \
  KGO_LOG_LEVEL=${KGO_LOG_LEVEL:-none} "$BIN" -test.timeout 30m ${KGO_ARGS:-}
