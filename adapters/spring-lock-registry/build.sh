#!/usr/bin/env bash
# Builds the RedisLockRegistry adapter from pom.xml's pinned jars (adapters/kit/maven-build.sh says how);
# scripts/setup runs it.
exec bash "$(dirname "$0")/../kit/maven-build.sh" "$(dirname "$0")" "$@"
