#!/usr/bin/env bash
# Build the stand-in wire-protocol server the TARGET=uri tests run against (tools/standin/):
# a Java 17 launcher around mongo-java-server and its H2 MVStore backend, with Maven fetching the
# versions pinned in tools/standin/pom.xml. Installs the Debian packages for Java and Maven when
# they are missing (as root). Prints the path of the jar.
# Usage: tools/build_standin.sh
set -euo pipefail
cd "$(dirname "$0")/standin"
PACKAGES=(default-jdk-headless maven)

java_ok() { command -v java >/dev/null && java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; }
if ! java_ok || ! command -v mvn >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    echo "standin: installing Debian packages: ${PACKAGES[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
  else
    echo "standin: Java 17+ and Maven are needed; run: sudo apt-get install ${PACKAGES[*]}" >&2
    exit 1
  fi
fi
echo "standin: building with Maven (the first build downloads its dependencies)" >&2
rm -rf target   # no jar of an earlier version left in target/lib, on the jar's class path
mvn -q -B package >&2
echo "$PWD/target/enginebench-standin.jar"
