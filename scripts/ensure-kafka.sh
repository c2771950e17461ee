#!/usr/bin/env bash
# Resolve the pinned Apache Kafka artifacts that roster's tests run beside it (the broker in KRaft
# mode, kafka-tools, kafka-clients, kafka-streams and their runtime deps) through Maven into
# .cache/kafka-<version>/libs/ (ignored by git; nothing from Kafka is committed). Idempotent: a
# stamp holding the POM's checksum makes a second run return at once. Installs Maven and Java 17
# with apt-get when run as root, otherwise says exactly what is missing and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
KAFKA_VERSION=4.4.0
POM=tests/kafka/pom.xml
CACHE=.cache/kafka-$KAFKA_VERSION
LIBS=$CACHE/libs
STAMP=$CACHE/.resolved

pom_sum=$(sha256sum "$POM" | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$pom_sum" ] && [ -f "$LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]; then
  exit 0
fi

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}
missing=()
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  missing+=(openjdk-17-jdk-headless)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} (Debian packages) to resolve Apache Kafka $KAFKA_VERSION"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "roster's tests run Apache Kafka $KAFKA_VERSION beside it and need: ${missing[*]}." >&2
    echo "Install with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

echo "resolving Apache Kafka $KAFKA_VERSION into $LIBS (Maven)"
rm -rf "$LIBS"
mkdir -p "$LIBS"
if ! mvn -q -B -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
     -DoutputDirectory="$PWD/$LIBS" >"$CACHE/mvn.log" 2>&1; then
  cat "$CACHE/mvn.log" >&2
  echo "Maven could not resolve Apache Kafka $KAFKA_VERSION (see above); the tests need it." >&2
  exit 1
fi
for jar in "kafka_2.13-$KAFKA_VERSION" "kafka-tools-$KAFKA_VERSION" "kafka-clients-$KAFKA_VERSION" \
           "kafka-streams-$KAFKA_VERSION"; do
  [ -f "$LIBS/$jar.jar" ] || { echo "missing $LIBS/$jar.jar after resolving" >&2; exit 1; }
done
echo "$pom_sum" >"$STAMP"
