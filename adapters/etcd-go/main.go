// Command etcd-go-adapter is lockbench's adapter for etcd's own Go lock: clientv3/concurrency's
// Mutex over a Session, the lease the session keeps alive, built by build.sh beside this file at
// two versions from this one source: 3.4.23 from Debian's Go sources alone (golang-etcd-server-dev,
// etcd34.go) and 3.7.3 from the Go module proxy (etcd37.go, go.mod), the same calls at each.
//
// Speaks lockbench's adapter protocol (docs/adapters.md) through the Go kit,
// adapters/kit/go/src/lockbench: it reads the environment, says ready, answers each request
// with what a handler returns (an error: {"ok": false, "error": ...}). The library's calls:
//
//	cli := clientv3.New(clientv3.Config{Endpoints: every member})  one client, its own balancer
//	session := concurrency.NewSession(cli, concurrency.WithTTL(s))  a lease, kept alive by the
//	                                                              library (a keepalive TTL/3 after
//	                                                              the last answer, on a 500 ms
//	                                                              tick: every 500 ms at 1 s)
//	acquire ── m := concurrency.NewMutex(session, key) ── m.Lock(ctx with a deadline)
//	             fence: the lock key's create revision (m.IsOwner()'s, no extra round trip)
//	release ── m.Unlock(ctx)
//
// One attempt per acquire: 3.4's Mutex has no TryLock (3.5 added it; 3.7 is called as 3.4 is, so
// that the two rows differ by the library alone), so Lock gets a context
// that ends after lock_wait_ms (default LOCKBENCH_COMMAND_TIMEOUT_MS, as the etcd-lock
// adapter's Lock RPC waits): Lock puts its waiter key (prefix/lease-id) under the session's
// lease and, if an older key holds the lock, watches for its deletion until the context ends;
// then it deletes its waiter key itself (Unlock with the client's context, which has no
// deadline) and the answer is "held". Lock's own clean-up waits as long as it must (a member
// that stopped answering), so every call here runs on a goroutine with a budget of 3/4 of
// LOCKBENCH_OP_TIMEOUT_MS: a call still running then is answered with an error and its session
// retired (closed on a goroutine: its lease revoked, its waiter key with it), for a waiter
// key left standing under a lease the session keeps alive would hold the lock from everyone,
// and the next Lock on the same session would take that key again, older revision and all.
// A failed Lock whose waiter key may still stand (its put's answer never came, or its own
// clean-up failed) gets one bounded Unlock, then the session is retired.
//
// Renewal is the library's: the session's lease is kept alive from NewSession until it is
// closed, whether the lock is held or not; lockbench cannot see the keepalives, and no
// validity_ms is answered (the lease lasts as long as the keepalives reach a member). Release
// is Unlock, a plain delete of the adapter's own key (prefix/lease-id, never another client's):
// it answers {"ok": true} without removed_on, since Unlock does not say whether the key was
// still there (a key gone with an expired lease is "released" all the same).
//
// Parameters (the run's params):
//   - session_done (default false): the application watches Session.Done(), the channel the
//     library says "closes when the lease is orphaned, expires, or is otherwise no longer being
//     refreshed": while the lock is held a goroutine waits on it and prints {"event": "lost"}
//     when it closes (lockbench's worker honours that only with a renew policy that abandons);
//     a lock whose session was already done when Lock returned is refused; the next acquire
//     opens a new session. Without it nothing watches: the lock is used as the library hands
//     it out, and a session whose lease has ended is replaced only once an acquire fails with
//     "requested lease not found", the one sign such an application gets.
//   - lock_wait_ms: how long Lock may wait for the holder to let go (see above).
//   - debug (default false): every Lock's outcome and time on stderr.
//
// stderr (kept in the run's folder) has a line for each session opened, retired, and seen
// done (whatever session_done says: evidence, not the protocol), and each failed Lock other
// than a wait that ran out, stamped with CLOCK_MONOTONIC (t_ns, as lockbench's histories).
//
// What the library does that its documentation does not say (lockbench's runs): the client's
// lessor stops keeping a lease alive once no keepalive answer has come for a TTL, though its
// keepalives still reach the server (held-replies: the replies are held, the requests are
// not), so the lease expires while Lock's answer is on its way, and Lock returns nil for a
// session that is already done: two holders, unless the application checks Done. 3.4's Lock
// also returns nil after a wait behind older keys without checking that its own key is still
// there (its lease may have expired meanwhile: etcd-io/etcd#11429; 3.5 added that check,
// ErrSessionExpired, in etcd-io/etcd#11408, never backported to 3.4). Lock's clean-up after a
// wait that ran out deletes its waiter key with the client's context, which has no deadline:
// with the leader just killed, Lock(ctx) returned seconds after ctx ended. The keepalive
// stream stays on one member: a member that stops answering (paused) takes the sessions
// whose stream it carries down with it, a TTL later.
//
// The TTL is whole seconds (WithTTL takes an int; 0 or less silently gives 60 s): a ttl_ms
// that is not a whole number of seconds, or under one, is refused (the ready line for the
// run's, an error answer for a request's). The session is opened before the ready line, so
// a ready adapter has a lease granted (a first round trip through consensus).
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"lockbench"

	"golang.org/x/sys/unix"
)

var (
	env      = lockbench.Env
	budget   time.Duration // for every request: 3/4 of the op timeout
	lockWait time.Duration // Lock's context
	params   struct {
		SessionDone bool     `json:"session_done"`
		LockWaitMs  *float64 `json:"lock_wait_ms"`
		Debug       bool     `json:"debug"`
	}
	cli *Client

	current *session // the session the next acquire uses
	held    *holding // while the lock is held
)

// A session and what it takes to end it.
type session struct {
	*Session
	ttlS    int
	cancel  context.CancelFunc // its context: NewSession's grant, and its keepalives
	retired bool
}

type holding struct {
	m       *Mutex
	s       *session
	stopped chan struct{} // closed at release: the Done watch ends
}

var errTimedOut = errors.New("timed out")

// logf writes one line of evidence to stderr (kept in the run's folder), stamped with
// CLOCK_MONOTONIC in nanoseconds, the clock of lockbench's histories (t_ns).
func logf(format string, args ...any) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	fmt.Fprintf(os.Stderr, "etcd-go adapter: t_ns=%d %s\n", ts.Nano(), fmt.Sprintf(format, args...))
}

// bounded runs call (named what, for stderr) on a goroutine and waits for it until deadline:
// errTimedOut if it is still running then (it goes on alone, and stderr says when it ends; the
// caller retires whatever it was using).
func bounded(what string, deadline time.Time, call func() error) error {
	done := make(chan error, 1)
	began := time.Now()
	lockbench.Go("etcd call", func() { done <- call() })
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		lockbench.Go("late call", func() {
			err := <-done
			logf("%s, given up on after %v, returned after %v: %v", what, deadline.Sub(began).Round(time.Millisecond),
				time.Since(began).Round(time.Millisecond), err)
		})
		return errTimedOut
	}
}

// openSession is newSession(cli, WithTTL(ttlS)) with a context that is cancelled
// if the lease is not granted by the deadline (NewSession's grant would otherwise wait as long
// as the client's own context, for ever).
func openSession(ttlS int, deadline time.Time) (*session, error) {
	ctx, cancel := context.WithCancel(context.Background())
	within := time.Until(deadline).Round(time.Millisecond)
	var s *Session
	err := bounded("NewSession", deadline, func() error {
		var err error
		s, err = newSession(cli, withTTL(ttlS), withContext(ctx))
		return err
	})
	if err == errTimedOut {
		cancel() // the grant gives up; a session made all the same keeps alive nothing: its lease expires
		return nil, fmt.Errorf("NewSession: no lease granted within %v", within)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("NewSession: %w", err)
	}
	logf("session %x opened (TTL %d s)", s.Lease(), ttlS)
	lockbench.Go("session log", func() { // evidence only, on stderr: the protocol hears of it only with session_done
		<-s.Done()
		logf("session %x: Session.Done() closed", s.Lease())
	})
	return &session{Session: s, ttlS: ttlS, cancel: cancel}, nil
}

// retire closes a session on a goroutine of its own: its keepalives stop and its lease is
// revoked (Close waits at most its TTL for that), so every key under it goes too.
func retire(s *session) {
	if s == nil || s.retired {
		return
	}
	s.retired = true
	logf("session %x retired (closed: keepalives stop, lease revoked)", s.Lease())
	if current == s {
		current = nil
	}
	lockbench.Go("session close", func() {
		if err := s.Close(); err != nil && err != errLeaseNotFound {
			logf("closing session %x: %v", s.Lease(), err)
		}
		s.cancel()
	})
}

func sessionDone(s *session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func wholeSeconds(ttlMs float64) (int, error) {
	if ttlMs < 1000 || ttlMs != math.Trunc(ttlMs) || int64(ttlMs)%1000 != 0 {
		return 0, fmt.Errorf("etcd's session TTL is whole seconds, at least 1: ttl_ms %v is not", ttlMs)
	}
	return int(ttlMs / 1000), nil
}

func acquire(req lockbench.Request) (lockbench.Answer, error) {
	if held != nil {
		return lockbench.Answer{"ok": false, "error": "already held"}, nil
	}
	ttlS, err := wholeSeconds(req.TTLMs)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(budget)
	if current != nil && (current.ttlS != ttlS || params.SessionDone && sessionDone(current)) {
		retire(current) // a new TTL; or, watching Done, a session that is over: a new one
	}
	if current == nil {
		if current, err = openSession(ttlS, deadline); err != nil {
			return nil, err
		}
	}
	s := current
	m := newMutex(s.Session, req.Key)
	wait := lockWait
	if left := time.Until(deadline); left < wait {
		wait = left
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	began := time.Now()
	err = bounded(fmt.Sprintf("Lock (session %x, its context %v)", s.Lease(), wait.Round(time.Millisecond)), deadline,
		func() error { return m.Lock(ctx) })
	if params.Debug || err != nil && !errors.Is(err, context.DeadlineExceeded) {
		logf("Lock %s (session %x): %v after %v", req.Key, s.Lease(), err, time.Since(began).Round(time.Microsecond))
	}
	if err == errTimedOut { // Lock's own clean-up is stuck: the session goes, its waiter key with it
		retire(s)
		return nil, fmt.Errorf("Lock did not return within %v (its session is closed)", budget)
	}
	if err != nil {
		return failedLock(m, s, err, wait, deadline)
	}
	fence, ok := createRevision(m)
	if !ok {
		return nil, fmt.Errorf("Lock returned without a create revision (IsOwner: %v)", m.IsOwner())
	}
	if params.SessionDone && sessionDone(s) { // the application watching Done sees it already closed
		unlock(m, s, deadline)
		retire(s)
		return lockbench.Answer{"ok": false, "error": fmt.Sprintf("Session.Done() closed while Lock ran (lease %x)", s.Lease())}, nil
	}
	h := &holding{m: m, s: s, stopped: make(chan struct{})}
	held = h
	if params.SessionDone {
		lockbench.AfterAnswer(func() { lockbench.Go("Session.Done watch", func() { watchDone(h) }) })
	}
	return lockbench.Answer{"ok": true, "token": m.Key(), "fence": fence, "nodes": []int{0}}, nil
}

// The lock key's create revision: what Lock compared its key's against (IsOwner's
// comparison), read without a round trip.
func createRevision(m *Mutex) (int64, bool) {
	rev, ok := ownerCompare(m).TargetUnion.(*compareCreateRevision)
	if !ok || rev.CreateRevision <= 0 {
		return 0, false
	}
	return rev.CreateRevision, true
}

// failedLock answers a Lock that returned an error. Lock deleted its own waiter key when its
// wait ran out (Unlock sets its key to "\x00"); a key still named means that clean-up did not
// run (the put's answer never came) or failed, so it is deleted here, within the budget, and
// the session retired if that fails too.
func failedLock(m *Mutex, s *session, err error, wait time.Duration, deadline time.Time) (lockbench.Answer, error) {
	cleaned := m.Key() == "\x00"
	if !cleaned && !unlock(m, s, deadline) {
		retire(s)
	}
	if err == errLeaseNotFound { // the session's lease has ended: a new one next time
		retire(s)
		return nil, fmt.Errorf("Lock: %w (the session's lease %x has ended; a new session next time)", err, s.Lease())
	}
	if cleaned && errors.Is(err, context.DeadlineExceeded) {
		return lockbench.Answer{"ok": false, "error": fmt.Sprintf("held (Lock waited %v: %v)", wait.Round(time.Millisecond), err)}, nil
	}
	return nil, fmt.Errorf("Lock: %w", err)
}

// unlock is m.Unlock within the budget; false if it failed or did not return.
func unlock(m *Mutex, s *session, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	err := bounded(fmt.Sprintf("Unlock %q (session %x)", m.Key(), s.Lease()), deadline, func() error { return m.Unlock(ctx) })
	if err != nil {
		logf("Unlock %q (session %x): %v", m.Key(), s.Lease(), err)
	}
	return err == nil
}

func watchDone(h *holding) {
	select {
	case <-h.s.Done():
		lockbench.Lost(fmt.Sprintf("Session.Done() closed while holding %s: lease %x expired or was not refreshed within its %d s TTL",
			h.m.Key(), h.s.Lease(), h.s.ttlS))
	case <-h.stopped:
	}
}

func release(req lockbench.Request) (lockbench.Answer, error) {
	if held == nil {
		return lockbench.Answer{"ok": false, "error": "not held"}, nil
	}
	h := held
	held = nil
	ok := unlock(h.m, h.s, time.Now().Add(budget))
	close(h.stopped) // after Unlock: a loss seen while it ran is still told
	if !ok {         // the key may stand under a lease the session keeps alive: it goes with the session
		retire(h.s)
		return nil, fmt.Errorf("Unlock of %s failed or did not return within %v (its session is closed)", h.m.Key(), budget)
	}
	return lockbench.Answer{"ok": true}, nil // Unlock does not say whether the key was still there
}

func onClose() {
	deadline := time.Now().Add(time.Second)
	if held != nil { // stdin closed while holding: let the lock go now rather than in a TTL
		unlock(held.m, held.s, deadline)
	}
	if current != nil {
		s := current
		bounded("Session.Close", deadline, func() error { return s.Close() })
	}
	bounded("Client.Close", deadline, cli.Close)
}

func main() {
	defer lockbench.OnPanic()
	if err := env.DecodeParams(&params); err != nil {
		lockbench.NotReady(lockbench.Describe(err))
	}
	if len(env.Nodes) == 0 {
		lockbench.NotReady("no etcd member in LOCKBENCH_NODES")
	}
	ttlS, err := wholeSeconds(float64(env.TTLMs))
	if err != nil {
		lockbench.NotReady(err.Error())
	}
	opTimeout := env.OpTimeout()
	if opTimeout <= 0 {
		opTimeout = 10 * env.CommandTimeout()
	}
	budget = opTimeout * 3 / 4
	lockWait = env.CommandTimeout()
	if params.LockWaitMs != nil {
		lockWait = time.Duration(*params.LockWaitMs * float64(time.Millisecond))
	}
	endpoints := make([]string, len(env.Nodes))
	for i, node := range env.Nodes {
		endpoints[i] = node.String()
	}
	// No autoSync and no Sync: the members' advertised URLs would bypass this client's own
	// paths (the link proxies).
	cli, err = newClient(Config{Endpoints: endpoints, DialTimeout: env.ConnectTimeout() + env.CommandTimeout()})
	if err != nil {
		lockbench.NotReady("clientv3.New: " + lockbench.Describe(err))
	}
	// The ready line must come within max(op timeout, 10 s): the first lease within 3/4 of it.
	startBudget := opTimeout
	if startBudget < 10*time.Second {
		startBudget = 10 * time.Second
	}
	if current, err = openSession(ttlS, time.Now().Add(startBudget*3/4)); err != nil {
		lockbench.NotReady(fmt.Sprintf("no lease from etcd at %s: %s", strings.Join(endpoints, ","), lockbench.Describe(err)))
	}
	watch := "nothing watches Session.Done()"
	if params.SessionDone {
		watch = "Session.Done() watched while held (lost event)"
	}
	lockbench.Ready(library,
		"etcd's Go Mutex: a key prefix/lease-id under a Session's lease (kept alive by the library), held by the oldest create revision; "+watch,
		true, nil)
	lockbench.Serve(lockbench.Handlers{"acquire": acquire, "release": release}, onClose) // no extend: the session keeps its lease alive
}
