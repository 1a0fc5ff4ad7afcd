#!/usr/bin/env bash
# scripts/throttle: the command runs inside a cgroup whose CPU quota is the fraction asked for,
# the kernel holds a busy loop back (nr_throttled > 0), and the group is gone afterwards with
# nothing of the command left running. Prints "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
throttle="$root/scripts/throttle"
passed=0 failed=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name" >&2; fi
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Inside: which group the command is in, and that group's quota as the kernel holds it.
"$throttle" 0.1 bash -c '
  group=$(awk -F: "\$2 ~ /(^|,)cpu(,|$)/ || \$2 == \"\" { print \$3; exit }" /proc/self/cgroup)
  for f in /sys/fs/cgroup/cpu$group/cpu.cfs_quota_us /sys/fs/cgroup$group/cpu.max; do [ -f "$f" ] && cat "$f"; done
  echo "$group"
  end=$((SECONDS + 2)); while [ $SECONDS -lt $end ]; do :; done
  sleep 300 & echo $! >'"$out"'/orphan
' >"$out/stdout" 2>"$out/stderr"
status=$?
quota=$((2 * $(nproc) * 10000 / 2))  # 0.1 of the machine, in us per 100 ms period
check "exits with the command's status" [ $status -eq 0 ]
check "the command ran in a group of its own" grep -q '^/lockbench-throttle-' "$out/stdout"
check "its quota is 0.1 of the machine ($quota us per 100000)" grep -q -E "^$quota( 100000)?\$" "$out/stdout"
held=$(sed -n 's/^throttle: held back \([0-9]*\) times.*/\1/p' "$out/stderr")
check "the kernel held a busy loop back (held back ${held:-?} times)" [ "${held:-0}" -gt 0 ]
group=$(grep '^/lockbench-throttle-' "$out/stdout" | head -n 1)
check "the group is gone afterwards" test -n "$group" -a ! -d "/sys/fs/cgroup/cpu$group" -a ! -d "/sys/fs/cgroup$group"
orphan=$(cat "$out/orphan" 2>/dev/null)
# Ended: gone, or a zombie its new parent has not reaped yet.
check "what the command left running was ended" bash -c "[ -n '$orphan' ] && ! grep -qs '^State:[[:space:]]*[RSD]' /proc/$orphan/status"
# scripts/cores: nproc, or less under a quota (this machine's own, if it has one; and the throttle's).
whole=$("$root/scripts/cores")
check "scripts/cores unthrottled is a number of cores up to nproc ($whole)" awk -v c="$whole" -v n="$(nproc)" 'BEGIN { exit !(c > 0 && c <= n) }'
half=$(awk -v n="$(nproc)" -v w="$whole" 'BEGIN { h = n / 2; print (w < h ? w : h) }')
cores=$("$throttle" 0.5 "$root/scripts/cores" 2>/dev/null)
check "scripts/cores reads the quota under scripts/throttle 0.5: $half (${cores:-?})" [ "$cores" = "$half" ]
# --jobs: 4 per core's worth, 1 to 16 (scripts/run's side by side).
jobs=$("$root/scripts/cores" --jobs)
check "scripts/cores --jobs is 4 per core, 1 to 16 ($jobs for $whole)" \
  [ "$jobs" = "$(awk -v c="$whole" 'BEGIN { j = int(4 * c + 0.5); print (j < 1 ? 1 : (j > 16 ? 16 : j)) }')" ]
half_jobs=$("$throttle" 0.5 "$root/scripts/cores" --jobs 2>/dev/null)
check "scripts/cores --jobs under scripts/throttle 0.5 is half as many, at least 1 ($half_jobs)" \
  awk -v h="$half_jobs" -v j="$jobs" 'BEGIN { exit !(h >= 1 && (h == int(j / 2 + 0.5) || h == int(j / 2))) }'
"$throttle" 7 true 2>/dev/null
check "a fraction over 1 is refused with status 2" [ $? -eq 2 ]
"$throttle" 0.5 bash -c 'exit 5' 2>/dev/null
check "the command's own status comes back" [ $? -eq 5 ]
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
