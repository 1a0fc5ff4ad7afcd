#!/usr/bin/env bash
# Builds adapters/bsm-redislock/bsm-redislock-adapter (bsm/redislock over go-redis v9) from the Go module proxy
# at the versions go.mod names, each module checked against go.sum (-mod=readonly: neither file
# is changed here), the Go kit (adapters/kit/go/src/lockbench) put in by go.mod's replace.
# Fetched here, at set-up, into Go's module cache; nothing is fetched while a case runs (the
# adapter is one static binary). Quiet, and done at once, when the binary is newer than its
# sources, go.mod, go.sum and this script; scripts/setup runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../kit/go/src/lockbench" && pwd)
out="$here/bsm-redislock-adapter"

if [ -x "$out" ] && [ -z "$(find "$here/main.go" "$here/go.mod" "$here/go.sum" "$here/build.sh" "$kit" -newer "$out" | head -1)" ]; then
  exit 0
fi
# go.mod's modules ask for Go 1.26 (its "go" line): the machine's Go (/usr/local/go), not
# Debian 12's golang-go 1.19, which etcd-go's build uses.
go=
for candidate in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
  [ -x "$candidate" ] || continue
  version=$("$candidate" env GOVERSION 2>/dev/null || true)  # go1.26.8
  minor=${version#go1.}; minor=${minor%%.*}
  if [[ "$minor" =~ ^[0-9]+$ ]] && ((minor >= 26)); then go=$candidate; break; fi
done
[ -n "$go" ] || { echo "bsm-redislock: Go 1.26 or later is missing (go.mod's modules ask for it; found: $(command -v go || echo none))" >&2; exit 1; }
export GO111MODULE=on GOFLAGS=-mod=readonly CGO_ENABLED=0
# Go's caches: GOCACHE and GOMODCACHE, else under $HOME; with no HOME (scripts run with an
# empty environment) folders of /tmp.
if [ -z "${HOME:-}" ]; then
  export GOCACHE=${GOCACHE:-/tmp/lockbench-go-build} GOMODCACHE=${GOMODCACHE:-/tmp/lockbench-go-mod}
fi
cd "$here"
"$go" build -trimpath -o "$out.tmp" .
mv -f "$out.tmp" "$out"
