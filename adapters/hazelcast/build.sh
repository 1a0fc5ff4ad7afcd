#!/usr/bin/env bash
# Builds Hazelcast's adapter and its members' jars; scripts/setup runs it.
#   lib/                 pom.xml's Hazelcast 5.4.0 (its one jar) and jackson-core, from Maven
#                        Central, checked against jars.sha256 (adapters/kit/maven-build.sh --jars-only);
#                        the members run it too (./member, the lock files' "server")
#   classes/adapter.jar  HazelcastAdapter.java with the Java kit
#   classes/adapter.jsa  a CDS archive of the classes one client session loads, made by running the
#                        adapter once (an acquire and a release) against one member of its own,
#                        with no CP members (Hazelcast's unsafe mode, for the training alone: the
#                        client's classes are the same). A JVM that cannot use it warns on stderr
#                        and starts without it, so a failed training run is a warning, not a failed build.
# Quiet, and done at once, when its outputs are newer than everything they are made of.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kit=$here/../kit
bash "$kit/maven-build.sh" "$here" --jars-only "$@"
for tool in javac jar java timeout; do
  command -v "$tool" >/dev/null 2>&1 || { echo "hazelcast: $tool not found: apt-get install default-jdk-headless" >&2; exit 1; }
done
sources=("$here/HazelcastAdapter.java" "$kit/LockbenchAdapter.java")
jar_out=$here/classes/adapter.jar cds_out=$here/classes/adapter.jsa
jvm=$(java -version 2>&1 | tr '\n' ' ')
up_to_date=1
[ -f "$jar_out" ] && [ "$(cat "$cds_out.jvm" 2>/dev/null)" = "$jvm" ] || up_to_date=0
for input in "${sources[@]}" "$here/build.sh" "$here/lib/.hashes-checked"; do
  [ "$input" -nt "$jar_out" ] && up_to_date=0
done
((up_to_date)) && exit 0

tmp=$(mktemp -d)
member_pid=
trap 'rm -rf "$tmp"; [ -z "$member_pid" ] || kill "$member_pid" 2>/dev/null || true' EXIT
mkdir -p "$tmp/classes" "$here/classes"
javac -Xlint:all,-path,-processing -Werror -encoding UTF-8 --release 17 -d "$tmp/classes" -cp "$here/lib/*" "${sources[@]}"
jar --create --file "$tmp/adapter.jar" -C "$tmp/classes" .
rm -f "$cds_out" "$cds_out.jvm"
mv "$tmp/adapter.jar" "$jar_out"

# The training: the lock files' JVM flags and class path (locks/hazelcast*.json), from locks/.
jvm_flags=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xlog:disable -Xlog:all=warning:stderr)
trained=0
for attempt in 1 2 3; do  # a free port: a member refuses one that is taken
  port=$((20000 + RANDOM % 40000))
  cat >"$tmp/member.xml" <<EOF
<hazelcast xmlns="http://www.hazelcast.com/schema/config">
  <cluster-name>lockbench</cluster-name>
  <network>
    <port auto-increment="false">$port</port>
    <interfaces enabled="true"><interface>127.0.0.1</interface></interfaces>
    <join><auto-detection enabled="false"/><multicast enabled="false"/></join>
  </network>
  <properties>
    <property name="hazelcast.socket.bind.any">false</property>
    <property name="hazelcast.phone.home.enabled">false</property>
  </properties>
</hazelcast>
EOF
  "$here/member" "$tmp/member.xml" >"$tmp/member.log" 2>&1 &
  member_pid=$!
  for _ in $(seq 300); do grep -q "is STARTED" "$tmp/member.log" && break; kill -0 "$member_pid" 2>/dev/null || break; sleep 0.1; done
  if grep -q "is STARTED" "$tmp/member.log"; then
    printf '{"op": "acquire", "key": "training", "ttl_ms": 2000, "wait_ms": 0}\n{"op": "release", "key": "training"}\n' \
      | (cd "$here/../../locks" && env LOCKBENCH_NODES="127.0.0.1:$port" LOCKBENCH_KEY=training LOCKBENCH_CLIENT=0 \
           LOCKBENCH_TTL_MS=2000 LOCKBENCH_PARAMS='{}' LOCKBENCH_COMMAND_TIMEOUT_MS=2000 LOCKBENCH_OP_TIMEOUT_MS=20000 \
           LOCKBENCH_CONNECT_TIMEOUT_MS=2000 timeout 120 java "${jvm_flags[@]}" -XX:ArchiveClassesAtExit="$tmp/adapter.jsa" \
           -cp "../adapters/hazelcast/classes/adapter.jar:../adapters/hazelcast/lib/*" HazelcastAdapter) >"$tmp/training.log" 2>&1 \
      && [ -s "$tmp/adapter.jsa" ] && trained=1
  fi
  kill "$member_pid" 2>/dev/null || true
  wait "$member_pid" 2>/dev/null || true
  member_pid=
  ((trained)) && break
done
if ((trained)); then
  mv "$tmp/adapter.jsa" "$cds_out"
else  # not tried again until the sources or the JVM change
  echo "hazelcast: no CDS archive (the adapter works without it, starting slower); the training run said:" >&2
  tail -n 20 "$tmp/training.log" "$tmp/member.log" >&2
fi
echo "$jvm" >"$cds_out.jvm"
