// Command bsm-redislock-adapter is lockbench's adapter for bsm/redislock
// (github.com/bsm/redislock, go.mod), a single-node Redis lock for Go over go-redis v9. Built by
// build.sh from the Go module proxy at go.sum's hashes.
//
// Speaks lockbench's adapter protocol (docs/adapters.md) through the Go kit,
// adapters/kit/go/src/lockbench. The library's calls, with its defaults but no retry (lockbench
// retries):
//
//	locker := redislock.New(client)
//	acquire ── locker.Obtain(ctx, key, ttl, &Options{RetryStrategy: NoRetry()}): a Lua script
//	            that SETs the key to a random token with PX ttl if it is free (or already holds
//	            that token); ErrNotObtained when another holds it
//	release ── lock.Release(ctx): a Lua compare-and-delete; ErrLockNotHeld when it is not ours
//	extend  ── lock.Refresh(ctx, ttl, nil): a Lua compare-and-PEXPIRE to ttl from now (replace
//	            only: it cannot add to the time left); ErrNotObtained when it is not ours
//
// The release line has no fencing token: the pinned release (v0.9.4) has none.
package main

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	goredislib "github.com/redis/go-redis/v9"

	"lockbench"
)

func main() {
	defer lockbench.OnPanic()
	env := lockbench.Env
	client := goredislib.NewClient(&goredislib.Options{
		Addr:         env.Nodes[0].String(),
		DialTimeout:  env.ConnectTimeout(),
		ReadTimeout:  env.CommandTimeout(),
		WriteTimeout: env.CommandTimeout(),
		MaxRetries:   -1, // one attempt per command: lockbench retries
		PoolSize:     2,
	})
	locker := redislock.New(client)
	ctx := context.Background()
	noRetry := &redislock.Options{RetryStrategy: redislock.NoRetry()}
	// A first obtain and release of a key of its own: go-redis dials on first use and the
	// script is loaded on first use, which is not a repetition's first acquire to pay.
	if warm, err := locker.Obtain(ctx, env.Key+":lockbench-warm", time.Second, noRetry); err == nil {
		_ = warm.Release(ctx)
	}
	lockbench.Ready("bsm/redislock "+lockbench.ModuleVersion("github.com/bsm/redislock"),
		"SET NX PX a random token by Lua, Lua compare-and-delete release, Lua compare-and-PEXPIRE refresh", false, nil)

	var lock *redislock.Lock
	lockbench.Serve(lockbench.Handlers{
		"acquire": func(req lockbench.Request) (lockbench.Answer, error) {
			l, err := locker.Obtain(ctx, req.Key, req.TTL(), noRetry)
			if errors.Is(err, redislock.ErrNotObtained) {
				return lockbench.Answer{"ok": false, "error": "held"}, nil
			} else if err != nil {
				return nil, err
			}
			lock = l
			return lockbench.Answer{"ok": true, "token": l.Token(), "nodes": []int{0}}, nil
		},
		"release": func(req lockbench.Request) (lockbench.Answer, error) {
			if lock == nil {
				return lockbench.Answer{"ok": false, "error": "nothing held"}, nil
			}
			if err := lock.Release(ctx); errors.Is(err, redislock.ErrLockNotHeld) {
				return lockbench.Answer{"ok": false, "error": "not ours (the compare-and-delete removed nothing)"}, nil
			} else if err != nil {
				return nil, err
			}
			return lockbench.Answer{"ok": true, "removed_on": []int{0}}, nil
		},
		"extend": func(req lockbench.Request) (lockbench.Answer, error) {
			if lock == nil {
				return lockbench.Answer{"ok": false, "error": "nothing held"}, nil
			}
			if !req.Replace {
				return lockbench.Answer{"ok": false, "error": "Refresh sets a whole TTL again: it cannot add to the time left"}, nil
			}
			if err := lock.Refresh(ctx, req.TTL(), nil); errors.Is(err, redislock.ErrNotObtained) {
				return lockbench.Answer{"ok": false, "error": "not extended (not ours)"}, nil
			} else if err != nil {
				return nil, err
			}
			return lockbench.Answer{"ok": true}, nil
		},
	}, nil)
}
