#!/usr/bin/env bash
# Builds adapters/redsync/redsync-adapter (redsync v4 over go-redis v9) from the Go module proxy at go.mod's versions and
# go.sum's hashes (adapters/kit/go-module-build.sh says how); scripts/setup runs it.
exec bash "$(dirname "$0")/../kit/go-module-build.sh" "$(dirname "$0")"
