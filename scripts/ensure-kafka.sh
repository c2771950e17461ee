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

# MirrorMaker 2 (the tested move to a Kafka cluster) has a class path of its own, resolved from its
# own POM with its own stamp (tests/kafka/mirror-maker/pom.xml says why it is separate).
MM_POM=tests/kafka/mirror-maker/pom.xml
MM_LIBS=$CACHE/mirror-maker-libs
MM_STAMP=$CACHE/.mirror-maker-resolved

pom_sum=$(sha256sum "$POM" | cut -d' ' -f1)
mm_sum=$(sha256sum "$MM_POM" | cut -d' ' -f1)
main_done() { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$pom_sum" ] && [ -f "$LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]; }
mm_done() { [ -f "$MM_STAMP" ] && [ "$(cat "$MM_STAMP")" = "$mm_sum" ] && ls "$MM_LIBS"/connect-mirror-[0-9]*.jar >/dev/null 2>&1; }
if main_done && mm_done; then
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
    scripts/apt-install.sh "${missing[@]}"
  else
    echo "roster's tests run Apache Kafka $KAFKA_VERSION beside it and need: ${missing[*]}." >&2
    echo "Install with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

mkdir -p "$CACHE"
if ! main_done; then
  echo "resolving Apache Kafka $KAFKA_VERSION into $LIBS (Maven)"
  # resolve beside the live folder and swap it in only once complete, so a failed resolution
  # never leaves the tests that are running without their jars
  rm -rf "$LIBS.new"
  mkdir -p "$LIBS.new"
  if ! mvn -q -B -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
       -DoutputDirectory="$PWD/$LIBS.new" >"$CACHE/mvn.log" 2>&1; then
    cat "$CACHE/mvn.log" >&2
    echo "Maven could not resolve Apache Kafka $KAFKA_VERSION (see above); the tests need it." >&2
    exit 1
  fi
  for jar in "kafka_2.13-$KAFKA_VERSION" "kafka-tools-$KAFKA_VERSION" "kafka-clients-$KAFKA_VERSION" \
             "kafka-streams-$KAFKA_VERSION"; do
    [ -f "$LIBS.new/$jar.jar" ] || { echo "missing $LIBS.new/$jar.jar after resolving" >&2; exit 1; }
  done
  rm -rf "$LIBS" && mv "$LIBS.new" "$LIBS"
  echo "$pom_sum" >"$STAMP"
fi
if ! mm_done; then
  echo "resolving MirrorMaker 2 into $MM_LIBS (Maven)"
  rm -rf "$MM_LIBS.new"
  mkdir -p "$MM_LIBS.new"
  if ! mvn -q -B -f "$MM_POM" dependency:copy-dependencies -DincludeScope=runtime \
       -DoutputDirectory="$PWD/$MM_LIBS.new" >"$CACHE/mvn-mirror-maker.log" 2>&1; then
    cat "$CACHE/mvn-mirror-maker.log" >&2
    echo "Maven could not resolve MirrorMaker 2 (see above); the cut-over tests need it." >&2
    exit 1
  fi
  ls "$MM_LIBS.new"/connect-mirror-[0-9]*.jar >/dev/null 2>&1 \
    || { echo "missing connect-mirror in $MM_LIBS.new after resolving" >&2; exit 1; }
  rm -rf "$MM_LIBS" && mv "$MM_LIBS.new" "$MM_LIBS"
  echo "$mm_sum" >"$MM_STAMP"
fi
