#!/usr/bin/env bash
# Builds a Java adapter whose library comes from Maven Central: maven-build.sh DIR [--record] [--jars-only],
# where DIR (adapters/<name>/) holds
#   pom.xml       the library and its version, exact (no ranges), and jackson-core for the kit
#   jars.sha256   the SHA-256 of every jar Maven resolves for it (sha256sum's format, by name)
#   <Class>.java  the adapter, one class in the default package using the kit (one file)
# and gets, git-ignored:
#   lib/          the jars, as pom.xml resolves them and jars.sha256 accepts them
#   classes/adapter.jar  the adapter with the kit (adapters/kit/LockbenchAdapter.java)
#   classes/adapter.jsa  a CDS archive of the classes one session loads, made by running
#                        the adapter once against a redis-server of its own (an acquire and a
#                        release, -XX:ArchiveClassesAtExit, JDK 17's way). Redisson's adapter says
#                        ready in about 1.0 CPU-s with it, 1.8 without. A JVM that cannot use it
#                        warns on stderr and starts without it, so a failed training run is a
#                        warning here, not a failed build.
# A lock file runs it from locks/ as ["java", <the flags below>, "-XX:SharedArchiveFile=../adapters/<name>/classes/adapter.jsa",
# "-cp", "../adapters/<name>/classes/adapter.jar:../adapters/<name>/lib/*", "<Class>"]: the same
# flags and class path as the training run, or the JVM refuses the archive.
#
# Maven fetches here, at set-up, once (into ~/.m2, Maven's own cache, its checksums strict); nothing
# is fetched while a case runs. Every run checks lib/'s jars against jars.sha256, the quick one
# too: a jar whose hash is not the recorded one (a changed artifact, a pom.xml changed without
# its hashes, a jar altered in place) fails the build, naming it. After changing pom.xml, write
# the new hashes with `maven-build.sh DIR --record` and read their diff before committing it.
# Deprecation warnings are off: a seed's code is judged as written, deprecated calls and all.
# Quiet, and done at once, when its outputs are newer than pom.xml, jars.sha256, the sources,
# the kit and this script. With --jars-only it makes and checks lib/ alone (an adapter that builds
# itself from those jars: adapters/curator/build.sh).
set -euo pipefail
export LC_ALL=C  # the jars' order in the hash list
usage() { echo "usage: maven-build.sh ADAPTER_DIR [--record] [--jars-only]" >&2; exit 2; }
[ $# -ge 1 ] || usage
dir=$(cd "$1" && pwd)
record= jars_only=
for option in "${@:2}"; do
  case $option in --record) record=1 ;; --jars-only) jars_only=1 ;; *) usage ;; esac
done
kit=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$dir")
jar_out=$dir/classes/adapter.jar
stamp=$dir/lib/.hashes-checked

tools=(mvn sha256sum)
[ -n "$jars_only" ] || tools+=(java javac jar redis-server redis-cli timeout)  # the build and its training run
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$name: $tool not found: apt-get install maven default-jdk-headless redis-server" >&2; exit 1; }
done
[ -f "$dir/pom.xml" ] || { echo "$name: $dir/pom.xml not found" >&2; exit 1; }
[ -n "$record" ] || [ -f "$dir/jars.sha256" ] \
  || { echo "$name: $dir/jars.sha256 not found (write it with: $0 $dir --record)" >&2; exit 1; }

newer_than() {  # newer_than OUTPUT INPUT...: whether some input is newer than the output (or it is missing)
  local out=$1; shift
  [ -e "$out" ] || return 0
  local input
  for input in "$@"; do [ -e "$input" ] && [ "$input" -nt "$out" ] && return 0; done
  return 1
}

hashes_of() {  # hashes_of FOLDER: its jars' hashes, in jars.sha256's format
  (cd "$1" && sha256sum -- *.jar)
}
mismatch() {  # mismatch FOUND: says which jars differ from jars.sha256, and fails
  echo "$name: the jars are not the ones jars.sha256 records (a changed artifact, or pom.xml changed without --record):" >&2
  diff -u "$dir/jars.sha256" "$1" | grep -E '^[-+][0-9a-f]' >&2
  exit 1
}

# The jars: resolved by Maven into a new folder beside lib/, checked, then put in place whole.
if [ -n "$record" ] || newer_than "$stamp" "$dir/pom.xml" "$dir/jars.sha256" "$kit/maven-build.sh"; then
  tmp=$(mktemp -d "$dir/.lib.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$dir" && mvn -q -B -ntp -C dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/lib") >"$tmp/mvn.log" 2>&1 \
    || { echo "$name: Maven could not resolve pom.xml's dependencies:" >&2; tail -n 20 "$tmp/mvn.log" >&2; exit 1; }
  hashes_of "$tmp/lib" >"$tmp/jars.sha256"
  if [ -n "$record" ]; then
    mv "$tmp/jars.sha256" "$dir/jars.sha256"
    echo "$name: recorded $(wc -l <"$dir/jars.sha256") jars' hashes in $dir/jars.sha256" >&2
  elif ! cmp -s "$dir/jars.sha256" "$tmp/jars.sha256"; then
    mismatch "$tmp/jars.sha256"
  fi
  rm -rf "$dir/lib"
  mv "$tmp/lib" "$dir/lib"
  touch "$stamp"
  rm -rf "$tmp"
else  # the quick path checks the jars in place
  hashes_of "$dir/lib" | cmp -s "$dir/jars.sha256" - || mismatch <(hashes_of "$dir/lib")
fi
[ -z "$jars_only" ] || exit 0

adapter_sources=("$dir"/*.java)
[ ${#adapter_sources[@]} -eq 1 ] && [ -f "${adapter_sources[0]}" ] \
  || { echo "$name: $dir has ${#adapter_sources[@]} .java files; the adapter is one class in one file" >&2; exit 1; }
main_class=$(basename "${adapter_sources[0]}" .java)
sources=("${adapter_sources[0]}" "$kit/LockbenchAdapter.java")
cds_out=$dir/classes/adapter.jsa
# The archive is tied to the JVM that wrote it (a JDK update keeps its files' dates): the version
# it was made with, or that its training failed with, is kept beside it.
jvm=$(java -version 2>&1 | tr '\n' ' ')
jvm_stamp=$dir/classes/adapter.jsa.jvm
if newer_than "$jar_out" "${sources[@]}" "$stamp" "$kit/maven-build.sh" \
   || [ "$(cat "$jvm_stamp" 2>/dev/null)" != "$jvm" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"; [ -z "${redis_pid:-}" ] || kill "$redis_pid" 2>/dev/null || true' EXIT
  mkdir -p "$tmp/classes" "$dir/classes"
  javac -Xlint:all,-path,-processing,-deprecation -Werror -encoding UTF-8 --release 17 -d "$tmp/classes" -cp "$dir/lib/*" "${sources[@]}"
  jar --create --file "$tmp/adapter.jar" -C "$tmp/classes" .
  rm -f "$cds_out" "$jvm_stamp"
  mv "$tmp/adapter.jar" "$jar_out"
  # The lock files' JVM flags (locks/<name>*.json), the class path as they write it, from locks/.
  jvm_flags=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xlog:disable -Xlog:all=warning:stderr)
  trained=0
  for attempt in 1 2 3; do  # a free port: redis-server refuses one that is taken
    port=$((20000 + RANDOM % 40000))
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >"$tmp/redis.log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    if redis-cli -p "$port" ping >/dev/null 2>&1; then
      printf '{"op": "acquire", "key": "training", "ttl_ms": 1000, "wait_ms": 0}\n{"op": "release", "key": "training"}\n' \
        | (cd "$dir/../../locks" && env LOCKBENCH_NODES="127.0.0.1:$port" LOCKBENCH_KEY=training LOCKBENCH_CLIENT=0 \
             LOCKBENCH_TTL_MS=1000 LOCKBENCH_PARAMS='{}' LOCKBENCH_COMMAND_TIMEOUT_MS=2000 LOCKBENCH_OP_TIMEOUT_MS=20000 \
             LOCKBENCH_CONNECT_TIMEOUT_MS=2000 timeout 120 java "${jvm_flags[@]}" -XX:ArchiveClassesAtExit="$tmp/adapter.jsa" \
             -cp "../adapters/$name/classes/adapter.jar:../adapters/$name/lib/*" "$main_class") >"$tmp/training.log" 2>&1 \
        && [ -s "$tmp/adapter.jsa" ] && trained=1
    fi
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=
    ((trained)) && break
  done
  if ((trained)); then
    mv "$tmp/adapter.jsa" "$cds_out"
  else  # not tried again until the sources or the JVM change
    echo "$name: no CDS archive (the adapter works without it, starting slower); the training run said:" >&2
    tail -n 20 "$tmp/training.log" "$tmp/redis.log" >&2
  fi
  echo "$jvm" >"$jvm_stamp"
fi
