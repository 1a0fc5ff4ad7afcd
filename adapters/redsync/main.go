// Command redsync-adapter is lockbench's adapter for redsync (github.com/go-redsync/redsync/v4,
// go.mod), the Go Redlock that the Redis documentation lists, over go-redis v9: one node, or
// five (the lock file's "nodes"), a client per node. Built by build.sh from the Go module
// proxy at go.sum's hashes.
//
// Speaks lockbench's adapter protocol (docs/adapters.md) through the Go kit,
// adapters/kit/go/src/lockbench. The library's calls, with its defaults but one try per
// acquire (lockbench retries):
//
//	rs := redsync.New(goredis.NewPool(client) per node)
//	acquire ── m := rs.NewMutex(key, WithExpiry(ttl), WithTries(1)) ── m.TryLock()
//	            SET NX PX of a random value on every node at once, each with a timeout of
//	            expiry × 0.05 (its timeout factor); granted on a majority within
//	            expiry − elapsed − drift (its drift factor, 0.01 of the expiry), which it answers
//	            as m.Until(): validity_ms counted from the acquire's start; else it deletes its
//	            value where it set it and fails
//	release ── m.Unlock()   a Lua compare-and-delete on every node; ok on a majority
//	extend  ── a mutex of the request's TTL with the held value (WithValue), Extend():
//	           a Lua compare-and-PEXPIRE to that TTL from now (replace only: it cannot add to
//	           the time left)
package main

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	"lockbench"
)

func main() {
	defer lockbench.OnPanic()
	env := lockbench.Env
	var pools []redis.Pool
	for _, node := range env.Nodes {
		pools = append(pools, goredis.NewPool(goredislib.NewClient(&goredislib.Options{
			Addr:         node.String(),
			DialTimeout:  env.ConnectTimeout(),
			ReadTimeout:  env.CommandTimeout(),
			WriteTimeout: env.CommandTimeout(),
			MaxRetries:   -1, // one attempt per command: lockbench retries
			PoolSize:     2,
		})))
	}
	if len(env.Sentinels) > 0 { // the master Sentinel names, by this client's own path
		var sentinels []string
		for _, s := range env.Sentinels {
			sentinels = append(sentinels, s.String())
		}
		dialer := &net.Dialer{Timeout: env.ConnectTimeout()}
		pools = []redis.Pool{goredis.NewPool(goredislib.NewFailoverClient(&goredislib.FailoverOptions{
			MasterName:    env.MasterName,
			SentinelAddrs: sentinels,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, port, err := net.SplitHostPort(addr)
				if err == nil {
					if own, ok := env.AddressMap[net.JoinHostPort(host, port)]; ok {
						addr = own.String()
					}
				}
				return dialer.DialContext(ctx, network, addr)
			},
			DialTimeout:  env.ConnectTimeout(),
			ReadTimeout:  env.CommandTimeout(),
			WriteTimeout: env.CommandTimeout(),
			MaxRetries:   -1,
			PoolSize:     2,
		}))}
	}
	rs := redsync.New(pools...)
	// A first acquire and release of a key of its own: go-redis dials on first use, and a
	// repetition's first acquire would pay for every node's connection within redsync's
	// per-node timeout of a twentieth of the TTL.
	warm := rs.NewMutex(env.Key+":lockbench-warm", redsync.WithExpiry(time.Second), redsync.WithTries(1))
	if err := warm.TryLock(); err == nil {
		_, _ = warm.Unlock()
	}
	lockbench.Ready("redsync "+lockbench.ModuleVersion("github.com/go-redsync/redsync/v4"),
		"Redlock: SET NX PX a random value on every node, a majority within the validity, Lua compare-and-delete release, Lua extend", false, nil)

	var mutex *redsync.Mutex
	lockbench.Serve(lockbench.Handlers{
		"acquire": func(req lockbench.Request) (lockbench.Answer, error) {
			start := time.Now()
			m := rs.NewMutex(req.Key, redsync.WithExpiry(req.TTL()), redsync.WithTries(1))
			if err := m.TryLock(); err != nil {
				var taken *redsync.ErrTaken
				if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
					return lockbench.Answer{"ok": false, "error": "held: " + err.Error()}, nil
				}
				return nil, err
			}
			mutex = m
			answer := lockbench.Answer{"ok": true, "token": m.Value(), "validity_ms": float64(m.Until().Sub(start)) / float64(time.Millisecond)}
			if len(pools) == 1 { // on five, redsync does not say which majority took it
				answer["nodes"] = []int{0}
			}
			return answer, nil
		},
		"release": func(req lockbench.Request) (lockbench.Answer, error) {
			if mutex == nil {
				return lockbench.Answer{"ok": false, "error": "nothing held"}, nil
			}
			ok, err := mutex.Unlock()
			if err != nil {
				return nil, err
			}
			return lockbench.Answer{"ok": ok}, nil
		},
		"extend": func(req lockbench.Request) (lockbench.Answer, error) {
			if mutex == nil {
				return lockbench.Answer{"ok": false, "error": "nothing held"}, nil
			}
			if !req.Replace {
				return lockbench.Answer{"ok": false, "error": "redsync's Extend sets a whole expiry again: it cannot add to the time left"}, nil
			}
			start := time.Now()
			mutex = rs.NewMutex(req.Key, redsync.WithExpiry(req.TTL()), redsync.WithTries(1), redsync.WithValue(mutex.Value()))
			if ok, err := mutex.Extend(); err != nil {
				return nil, err
			} else if !ok {
				return lockbench.Answer{"ok": false, "error": "not extended"}, nil
			}
			return lockbench.Answer{"ok": true, "validity_ms": float64(mutex.Until().Sub(start)) / float64(time.Millisecond)}, nil
		},
	}, nil)
}
