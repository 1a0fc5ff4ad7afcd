#!/usr/bin/env bash
# Builds the Curator adapter (CuratorAdapter.java with the Java kit, adapters/kit/) at two versions
# of Curator, side by side; scripts/setup runs it:
#   Debian's  Curator 5.4.0 and ZooKeeper's client 3.8 from Debian's packages only:
#             default-jdk-headless (javac, jar, java) and libcurator-recipes-java (Curator's and
#             ZooKeeper's jars, Guava, SLF4J, jackson-core, all in /usr/share/java);
#   pom.xml's Curator 5.9.0 and ZooKeeper's client 3.9.5 from Maven Central, copied into lib/ and
#             checked against jars.sha256 (adapters/kit/maven-build.sh --jars-only).
# Each is quiet, and done in a moment, when its outputs are newer than everything they are made of.
#
# Outputs, in adapters/curator/classes/ (git-ignored), NAME curator (Debian's) and curator-5.9:
#   NAME-adapter.jar  the adapter, the kit, and CdsTraining, compiled against that version's jars
#                     (a jar, not a folder of classes: a CDS archive refuses a class path with a
#                     non-empty folder in it)
#   NAME.jsa          a CDS archive of the classes one session loads (-XX:ArchiveClassesAtExit,
#                     JDK 17's way; -XX:+AutoCreateSharedArchive is JDK 19's), made by running the
#                     adapter once against a ZooKeeper server embedded in CdsTraining. With it the
#                     adapter says ready in about half the time and CPU (see locks/curator.json's
#                     flags). A JVM that cannot use it (a JDK or a jar updated since) warns on
#                     stderr and starts without it; without it at all, silently. So a failed
#                     training run is a warning here, not a failed build.
#
# The class paths below are the lock files' (locks/curator*.json): keep them in step, or java
# refuses the archive (a warning on stderr, and a slower start).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/classes
locks=$(cd "$here/../../locks" && pwd)
share=/usr/share/java
sources=("$here/CuratorAdapter.java" "$here/CdsTraining.java" "$here/../kit/LockbenchAdapter.java")
# The JVM flags of the lock files' command, but for the archive.
jvm_flags=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xlog:disable -Xlog:all=warning:stderr)

for tool in javac jar java; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build.sh: $tool not found: apt-get install default-jdk-headless" >&2; exit 1; }
done
java_bin=$(readlink -f "$(command -v java)")

# build NAME LIBS [INPUT...]: classes/NAME-adapter.jar and classes/NAME.jsa from LIBS, the library's
# class path as the lock files write it (relative to locks/, where everything here runs, so that
# the archive records the class path a run gives), unless both are newer than the sources, this
# script, every jar of LIBS (an update), the INPUTs and the JDK (an archive is tied to the JVM that
# wrote it).
tmp=
trap 'rm -rf "$tmp"' EXIT
build() {
  local name=$1 libs=$2
  shift 2
  local jar_out=$out/$name-adapter.jar cds_out=$out/$name.jsa
  local classpath=../adapters/curator/classes/$name-adapter.jar:$libs
  local input output up_to_date=1
  local inputs=("${sources[@]}" "$here/build.sh" "$java_bin" "$(dirname "$java_bin")/../lib/server/libjvm.so" "$@")
  # LIBS's jars; a folder/* entry, as java reads it, is every jar in the folder
  local entry entries
  IFS=: read -ra entries <<<"$libs"
  for entry in "${entries[@]}"; do
    if [[ $entry == *'/*' ]]; then
      for input in "$locks/${entry%/\*}"/*.jar; do inputs+=("$input"); done
    else
      inputs+=("$(cd "$locks" && realpath "$entry")")
    fi
  done
  for output in "$jar_out" "$cds_out"; do
    [ -f "$output" ] || { up_to_date=0; break; }
    for input in "${inputs[@]}"; do
      if [ -e "$input" ] && [ "$input" -nt "$output" ]; then up_to_date=0; break 2; fi
    done
  done
  ((up_to_date)) && return 0

  tmp=$(mktemp -d)
  mkdir -p "$tmp/classes" "$out"
  # -Xlint:-path: zookeeper.jar's manifest names jars Debian does not ship (jline.jar); -classfile:
  # ZooKeeper 3.9's classes carry SpotBugs' annotations, a jar it compiles against alone.
  (cd "$locks" && javac -Xlint:all,-path,-classfile -Werror -encoding UTF-8 --release 17 -d "$tmp/classes" -cp "$libs" "${sources[@]}")
  jar --create --file "$tmp/adapter.jar" -C "$tmp/classes" .
  rm -f "$cds_out"
  mv "$tmp/adapter.jar" "$jar_out"
  # The archive: one session through the lock files' class path, the classes written at exit.
  # The embedded server is always Debian's (ZooKeeper 3.9's needs Dropwizard Metrics, a jar its
  # client does not pull in); the adapter's JVM has the lock files' class path.
  if (cd "$locks" && timeout 120 java -cp "$trainer" CdsTraining \
        java "${jvm_flags[@]}" -XX:ArchiveClassesAtExit="$tmp/adapter.jsa" -cp "$classpath" CuratorAdapter) \
       >"$tmp/training.log" 2>&1 && [ -s "$tmp/adapter.jsa" ]; then
    mv "$tmp/adapter.jsa" "$cds_out"
  else
    echo "build.sh: no CDS archive for $name (the adapter works without it, starting slower); the training run said:" >&2
    tail -n 20 "$tmp/training.log" >&2
  fi
  rm -rf "$tmp"
}

debian=
for lib in jackson-core curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
  [ -f "$share/$lib.jar" ] || { echo "build.sh: $share/$lib.jar not found: apt-get install libcurator-recipes-java" >&2; exit 1; }
  debian+=${debian:+:}$share/$lib.jar
done
trainer=../adapters/curator/classes/curator-adapter.jar:$debian
build curator "$debian"

bash "$here/../kit/maven-build.sh" "$here" --jars-only "$@"
# lib/'s stamp: a jar set changed to one with older dates (Maven keeps its cache's) rebuilds too
build curator-5.9 "../adapters/curator/lib/*" "$here/lib/.hashes-checked"
