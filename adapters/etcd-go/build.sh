#!/bin/bash
# Builds etcd's Go Mutex at two versions, side by side, from one main.go (etcd34.go and
# etcd37.go name the library's calls at each), and etcd's server at the newer one; scripts/setup
# runs it:
#   etcd-go-adapter       clientv3/concurrency 3.4.23 from Debian's packages only: golang-etcd-server-dev,
#                         whose Go sources (and its dependencies': grpc, protobuf, zap, ...) are under
#                         /usr/share/gocode. GOPATH mode, the Go kit (adapters/kit/go) first, Debian's
#                         sources after it; go.mod is not read.
#   etcd-go-3.7-adapter   client/v3/concurrency at go.mod's version (3.7.3), and
#   etcd-3.7              etcd's server at the same version (server/main.go: etcdmain.Main), both from
#                         the Go module proxy at go.sum's hashes (adapters/kit/go-module-build.sh).
# Each is quiet, and done at once, when its binary is newer than its sources and this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../kit/go" && pwd)
out="$here/etcd-go-adapter"
gocode=/usr/share/gocode

# In a subshell: its GOPATH-mode settings (GO111MODULE=off, GOPROXY=off) must not reach the module
# builds below.
debian_build() (
  command -v go >/dev/null 2>&1 || { echo "etcd-go: go is missing: apt-get install golang-go" >&2; exit 1; }
  [ -d "$gocode/src/go.etcd.io/etcd/clientv3/concurrency" ] \
    || { echo "etcd-go: etcd's Go client is missing ($gocode/src/go.etcd.io/etcd/clientv3): apt-get install golang-etcd-server-dev" >&2; exit 1; }

  export GO111MODULE=off GOPATH="$kit:$gocode" GOFLAGS= GOPROXY=off CGO_ENABLED=0
  # Go's cache: GOCACHE, else $XDG_CACHE_HOME/go-build or $HOME/.cache/go-build; with none of them
  # (scripts run with an empty environment) a folder of /tmp.
  [ -n "${GOCACHE:-}${XDG_CACHE_HOME:-}${HOME:-}" ] || export GOCACHE=/tmp/lockbench-go-build
  cd "$here"
  go build -trimpath -o "$out.tmp" .
  mv -f "$out.tmp" "$out"
)

# 3.4.23, from Debian's packages alone (first: it needs no module proxy)
if [ ! -x "$out" ] || [ "$here/build.sh" -nt "$out" ] \
   || [ -n "$(find "$here" -maxdepth 1 -name '*.go' -newer "$out" | head -1)$(find "$kit/src" -name '*.go' -newer "$out" | head -1)" ]; then
  debian_build
fi
# 3.7.3, adapter and server, from the Go module proxy
modules="$here/../kit/go-module-build.sh"
bash "$modules" "$here" etcd-go-3.7-adapter . etcd37
bash "$modules" "$here" etcd-3.7 ./server
