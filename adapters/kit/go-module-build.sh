#!/usr/bin/env bash
# Builds a Go program whose library comes from the Go module proxy:
#   go-module-build.sh DIR [OUTPUT PACKAGE [TAGS]]
# where DIR (adapters/<name>/) holds go.mod and go.sum, and gets DIR/OUTPUT (default
# <name>-adapter), one static binary (git-ignored) of PACKAGE (default ".", a folder under DIR)
# built with the build tags TAGS (default none). The modules are those go.mod names, each
# checked against go.sum (-mod=readonly: neither file is changed here), the Go kit
# (adapters/kit/go/src/lockbench) put in by go.mod's replace. Fetched here, at set-up, into Go's
# module cache; nothing is fetched while a case runs. Quiet, and done at once, when the binary is
# newer than PACKAGE's Go sources, go.mod, go.sum, the adapter's build.sh, the kit and this script;
# scripts/setup runs it (through the adapter's build.sh).
set -euo pipefail
[ $# -eq 1 ] || [ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: go-module-build.sh DIR [OUTPUT PACKAGE [TAGS]]" >&2; exit 2; }
here=$(cd "$1" && pwd)
name=$(basename "$here")
kit=$(cd "$(dirname "$0")/go/src/lockbench" && pwd)
out="$here/${2:-$name-adapter}" package=${3:-.} tags=${4:-}

if [ -x "$out" ] && [ -z "$(find "$here/$package" -maxdepth 1 -name '*.go' -newer "$out" | head -1)" ] \
   && [ -z "$(find "$here/go.mod" "$here/go.sum" "$here/build.sh" "$kit" "$0" -newer "$out" | head -1)" ]; then
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
[ -n "$go" ] || { echo "$name: Go 1.26 or later is missing (go.mod's modules ask for it; found: $(command -v go || echo none))" >&2; exit 1; }
export GO111MODULE=on GOFLAGS=-mod=readonly CGO_ENABLED=0
# Go's caches: GOCACHE and GOMODCACHE, else under $HOME; with no HOME (scripts run with an
# empty environment) folders of /tmp.
if [ -z "${HOME:-}" ]; then
  export GOCACHE=${GOCACHE:-/tmp/lockbench-go-build} GOMODCACHE=${GOMODCACHE:-/tmp/lockbench-go-mod}
fi
cd "$here"
"$go" build -trimpath -tags "$tags" -o "$out.tmp" "$package"
mv -f "$out.tmp" "$out"
