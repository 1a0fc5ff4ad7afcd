#!/usr/bin/env bash
# Builds the Curator adapter (CuratorAdapter.java with the Java kit, adapters/kit/) from Debian's
# packages only: default-jdk-headless (javac, jar, java) and libcurator-recipes-java (Curator's
# and ZooKeeper's jars, Guava, SLF4J, jackson-core, all in /usr/share/java). scripts/setup runs
# it; quiet, and done in a moment, when its outputs are newer than everything they are made of.
#
# Outputs, in adapters/curator/classes/ (git-ignored):
#   curator-adapter.jar  the adapter, the kit, and CdsTraining (a jar, not a folder of classes:
#                        a CDS archive refuses a class path with a non-empty folder in it)
#   curator.jsa          a CDS archive of the classes one session loads (-XX:ArchiveClassesAtExit,
#                        JDK 17's way; -XX:+AutoCreateSharedArchive is JDK 19's), made by running
#                        the adapter once against a ZooKeeper server embedded in CdsTraining. With
#                        it the adapter says ready in about half the time and CPU (see
#                        locks/curator.json's flags). A JVM that cannot use it (a JDK or a jar
#                        updated since) warns on stderr and starts without it; without it at all,
#                        silently. So a failed training run is a warning here, not a failed build.
#
# The class path below is the lock files' (locks/curator*.json): keep them in step, or java
# refuses the archive (a warning on stderr, and a slower start).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/classes
jar_out=$out/curator-adapter.jar
cds_out=$out/curator.jsa
share=/usr/share/java
libs=(jackson-core curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple)
classpath=$jar_out
for lib in "${libs[@]}"; do classpath+=":$share/$lib.jar"; done
sources=("$here/CuratorAdapter.java" "$here/CdsTraining.java" "$here/../kit/LockbenchAdapter.java")
# The JVM flags of the lock files' command, but for the archive.
jvm_flags=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xlog:disable -Xlog:all=warning:stderr)

for tool in javac jar java; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build.sh: $tool not found: apt-get install default-jdk-headless" >&2; exit 1; }
done
for lib in "${libs[@]}"; do
  [ -f "$share/$lib.jar" ] || { echo "build.sh: $share/$lib.jar not found: apt-get install libcurator-recipes-java" >&2; exit 1; }
done

# Up to date: both outputs newer than the sources, this script, every jar (a Debian update), and
# the JDK (an archive is tied to the JVM that wrote it).
java_bin=$(readlink -f "$(command -v java)")
inputs=("${sources[@]}" "$here/build.sh" "$java_bin" "$(dirname "$java_bin")/../lib/server/libjvm.so")
for lib in "${libs[@]}"; do inputs+=("$share/$lib.jar"); done
up_to_date=1
for output in "$jar_out" "$cds_out"; do
  [ -f "$output" ] || { up_to_date=0; break; }
  for input in "${inputs[@]}"; do
    if [ -e "$input" ] && [ "$input" -nt "$output" ]; then up_to_date=0; break 2; fi
  done
done
((up_to_date)) && exit 0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/classes" "$out"
# -Xlint:-path: zookeeper.jar's manifest names jars Debian does not ship (jline.jar).
javac -Xlint:all,-path -Werror -encoding UTF-8 --release 17 -d "$tmp/classes" -cp "${classpath#*:}" "${sources[@]}"
jar --create --file "$tmp/curator-adapter.jar" -C "$tmp/classes" .
rm -f "$cds_out"
mv "$tmp/curator-adapter.jar" "$jar_out"

# The archive: one session through the lock files' class path, the classes written at exit.
if java -cp "$classpath" CdsTraining \
     java "${jvm_flags[@]}" -XX:ArchiveClassesAtExit="$tmp/curator.jsa" -cp "$classpath" CuratorAdapter \
     >"$tmp/training.log" 2>&1 && [ -s "$tmp/curator.jsa" ]; then
  mv "$tmp/curator.jsa" "$cds_out"
else
  echo "build.sh: no CDS archive (the adapter works without it, starting slower); the training run said:" >&2
  tail -n 20 "$tmp/training.log" >&2
fi
