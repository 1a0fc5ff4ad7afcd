#!/bin/bash
# Builds adapters/etcd-go/etcd-go-adapter (etcd's Go Mutex, clientv3/concurrency 3.4) from
# Debian's packages only: golang-go, and golang-etcd-server-dev, whose Go sources (and its
# dependencies': grpc, protobuf, zap, ...) are under /usr/share/gocode. No module proxy:
# GOPATH mode, the Go kit (adapters/kit/go) first, Debian's sources after it. Quiet, and
# done at once, when the binary is newer than its sources and this script; scripts/setup runs
# it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../kit/go" && pwd)
out="$here/etcd-go-adapter"
gocode=/usr/share/gocode

if [ -x "$out" ] && [ ! "$here/build.sh" -nt "$out" ] && [ -z "$(find "$here" "$kit/src" -name '*.go' -newer "$out" | head -1)" ]; then
  exit 0
fi
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
