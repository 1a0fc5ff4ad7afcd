// Package lockbench is lockbench's adapter protocol for a Go lock library (docs/adapters.md),
// the standard library only (Linux).
//
// The protocol: lockbench starts the adapter with its settings in LOCKBENCH_* variables; the
// adapter's first stdout line is {"ready": true, "library": ..., "algorithm": ..., "fencing": ...}
// (or {"ready": false, "error": ...} and exit 1); then it reads one JSON request a line on stdin
// (acquire, release, extend), one at a time, and answers each with one line {"ok": ..., ...};
// {"event": "lost", "detail": ...} may come at any time, unasked. It exits when stdin closes.
// stdout carries only those lines; logs and stack traces go to stderr.
//
// This package does all of that: Env (the settings, parsed when the package initialises; a
// malformed one is the not-ready line), Ready, NotReady, Missing, Serve (the request loop: a
// handler's answer is written as it returns it; one that returns an error answers
// {"ok": false, "error": "<Type>: <message>"} (Describe), as does one that panics, an unknown op or a line
// that is not JSON, and the loop goes on; stdin closed: onClose, then exit 0), Lost/Event/Say
// (one mutex around every protocol write: a goroutine's event never interleaves with an
// answer), AfterAnswer (an event about what an answer hands out comes after that answer), Go
// (a goroutine whose panic is logged to stderr rather than the end of the adapter), and
// OnPanic (deferred first in main: a panic before the ready line becomes the not-ready line).
// When it initialises it points file descriptor 1 at stderr and keeps the protocol's pipe for
// itself, so fmt.Print and a library's stray output go to stderr, never into the protocol.
//
// Go cannot catch a panic on a goroutine it did not start (a library's own goroutine that
// panics ends the process, and lockbench reports the adapter's death); start yours with Go.
//
// An adapter is built in GOPATH mode, with this folder's parent first in GOPATH (the folder
// lockbench gives every adapter as LOCKBENCH_KIT, then go/), the library's sources after it
// (Debian's are under /usr/share/gocode): see adapters/etcd-go/build.sh.
//
//	package main
//
//	import (
//		"lockbench"
//		"example.org/mylock"
//	)
//
//	func main() {
//		defer lockbench.OnPanic()
//		env := lockbench.Env
//		client, err := mylock.Dial(env.Nodes[0].String(), env.CommandTimeout())
//		if err != nil {
//			lockbench.NotReady("mylock: " + lockbench.Describe(err))
//		}
//		lockbench.Ready("mylock "+mylock.Version, "SET NX PX with a random token, Lua release", false, nil)
//		lockbench.Serve(lockbench.Handlers{
//			"acquire": func(req lockbench.Request) (lockbench.Answer, error) {
//				token, err := client.Lock(req.Key, req.TTL())
//				return lockbench.Answer{"ok": err == nil, "token": token}, err
//			},
//			"release": func(req lockbench.Request) (lockbench.Answer, error) {
//				return lockbench.Answer{"ok": true}, client.Unlock(req.Key)
//			},
//		}, nil)
//	}
package lockbench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Answer is one answer line: "ok" (a bool) and whatever else the protocol lets it carry
// ("token", "fence", "validity_ms", "nodes", "removed_on", "error").
type Answer map[string]any

// Request is one request line: its usual fields, and every field as sent (Raw).
type Request struct {
	Op      string
	Key     string
	TTLMs   float64 // ttl_ms: acquire and extend
	WaitMs  float64 // wait_ms: acquire (0: one attempt)
	Replace bool    // extend: T from now (true) or the time left plus T (false)
	Raw     map[string]any
}

// TTL is the request's ttl_ms as a duration.
func (r Request) TTL() time.Duration { return millis(r.TTLMs) }

// Handler answers one request; an error (with any answer) answers {"ok": false, "error": ...}.
type Handler func(req Request) (Answer, error)

// Handlers maps an op name ("acquire", "release", "extend") to its handler.
type Handlers map[string]Handler

// Address is a host and a port, "127.0.0.1:6379".
type Address struct {
	Host string
	Port int
}

func (a Address) String() string { return a.Host + ":" + strconv.Itoa(a.Port) }

// Settings are the settings lockbench gives every adapter. An absent number is 0 (Client
// too: ClientGiven says whether it was set).
type Settings struct {
	Nodes            []Address // node 0 first
	Key              string
	Client           int // -1: the start-up check
	ClientGiven      bool
	TTLMs            int
	Params           map[string]any  // the run's parameters, as JSON decodes them
	ParamsJSON       json.RawMessage // the same, as given ({} when none)
	CommandTimeoutMs int
	OpTimeoutMs      int
	ConnectTimeoutMs int
	// Under Sentinel: where to ask for the master, and this client's own path to each
	// address the Sentinels may name ("host:port" -> Address).
	Sentinels  []Address
	MasterName string
	AddressMap map[string]Address
}

// OwnPath is this client's own path to an address a Sentinel named.
func (s *Settings) OwnPath(host string, port int) Address {
	if a, ok := s.AddressMap[Address{host, port}.String()]; ok {
		return a
	}
	return Address{host, port}
}

// DecodeParams decodes the run's parameters into v (a struct with json tags; fields it does
// not name are left alone, so lockbench's own "fence" and "ttl_ms" need no field).
func (s *Settings) DecodeParams(v any) error {
	if err := json.Unmarshal(s.ParamsJSON, v); err != nil {
		return fmt.Errorf("LOCKBENCH_PARAMS: %w", err)
	}
	return nil
}

// CommandTimeout is LOCKBENCH_COMMAND_TIMEOUT_MS, OpTimeout LOCKBENCH_OP_TIMEOUT_MS,
// ConnectTimeout LOCKBENCH_CONNECT_TIMEOUT_MS, each as a duration.
func (s *Settings) CommandTimeout() time.Duration { return millis(float64(s.CommandTimeoutMs)) }
func (s *Settings) OpTimeout() time.Duration      { return millis(float64(s.OpTimeoutMs)) }
func (s *Settings) ConnectTimeout() time.Duration { return millis(float64(s.ConnectTimeoutMs)) }

// Env holds the settings, parsed from the environment when the package initialises.
var Env *Settings

var (
	out        *os.File   // the protocol's stream: the stdout lockbench gave us
	outMu      sync.Mutex // one protocol line at a time, whole
	readySaid  bool
	afterMu    sync.Mutex
	afterQueue []func()
)

func init() {
	// Keep stdout for the protocol; descriptor 1 (fmt.Print, a library's stray output) now
	// goes to stderr, as the Python kit's sys.stdout does.
	fd, err := syscall.Dup(1)
	if err == nil {
		syscall.CloseOnExec(fd)
		err = syscall.Dup3(2, 1, 0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockbench adapter: cannot set stdout aside (%v): stray output may break the protocol\n", err)
		out = os.Stdout
	} else {
		out = os.NewFile(uintptr(fd), "lockbench-protocol")
	}
	env, err := readEnv(os.Getenv)
	if err != nil { // a malformed setting: nothing can run
		NotReady("lockbench's environment: " + Describe(err))
	}
	Env = env
}

// Say writes one protocol line, whole, from any goroutine.
func Say(obj any) error {
	line, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	outMu.Lock()
	defer outMu.Unlock()
	_, err = out.Write(append(line, '\n'))
	return err
}

// Describe is an error as an answer's error text: "<Type>: <message>" (Go's type name without
// its pointer star), or the message alone for the standard library's anonymous errors
// (errors.New's, fmt.Errorf's), whose type says nothing.
func Describe(err error) string {
	if err == nil {
		return "nil error"
	}
	name := strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
	switch name {
	case "errors.errorString", "fmt.wrapError", "fmt.wrapErrors":
		return err.Error()
	}
	return name + ": " + err.Error()
}

func exit(status int) {
	out.Sync()
	os.Stderr.Sync()
	os.Exit(status) // a library's goroutines must not keep the adapter alive
}

// NotReady says on the first line why the adapter cannot run; exit 1.
func NotReady(error string) {
	Say(map[string]any{"ready": false, "error": error})
	exit(1)
}

// Missing is a library that is not installed: "<what> is missing: <how>" (how installs it).
func Missing(what, how string) {
	NotReady(what + " is missing: " + how)
}

// ModuleVersion is the version of a module the binary was built with, as go.mod chose it and
// the binary records it ("?" when it has no such dependency, as in a GOPATH build): for the
// ready line, of a library that names no version of its own.
func ModuleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return dep.Version
			}
		}
	}
	return "?"
}

// Ready is the ready line: library "NAME VERSION" (read from the package), algorithm in one
// line, whether it hands out fencing tokens, and any extra fields (nil: none).
func Ready(library, algorithm string, fencing bool, extra map[string]any) {
	line := map[string]any{}
	for k, v := range extra {
		line[k] = v
	}
	line["ready"], line["library"], line["algorithm"], line["fencing"] = true, library, algorithm, fencing
	if err := Say(line); err != nil {
		NotReady("the ready line: " + Describe(err))
	}
	readySaid = true
}

// Event is an unsolicited line, {"event": kind, ...fields}, at any time, from any goroutine.
func Event(kind string, fields map[string]any) {
	line := map[string]any{}
	for k, v := range fields {
		line[k] = v
	}
	line["event"] = kind
	if err := Say(line); err != nil {
		fmt.Fprintf(os.Stderr, "lockbench adapter: event %s not sent: %v\n", kind, err)
	}
}

// Lost says the library says the lock is lost.
func Lost(detail string) {
	Event("lost", map[string]any{"detail": detail})
}

// AfterAnswer, called by a handler, runs f once that handler's answer is written (on the
// request loop's goroutine, before the next request is read): a goroutine that may announce
// something about what the answer hands out (a watch on the lock it grants) is started from
// f, so that its event cannot come before the answer (lockbench would count it against the
// lease held before).
func AfterAnswer(f func()) {
	afterMu.Lock()
	afterQueue = append(afterQueue, f)
	afterMu.Unlock()
}

// Go runs f on a goroutine of its own; a panic there is logged to stderr and ends only that
// goroutine, never the adapter.
func Go(name string, f func()) {
	go func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(os.Stderr, "lockbench adapter: panic in goroutine %s (the adapter goes on): %v\n%s", name, p, debug.Stack())
			}
		}()
		f()
	}()
}

// OnPanic, deferred first thing in main, turns a panic of main's goroutine into a stack trace
// on stderr, preceded by the not-ready line if the ready line was not said yet; exit 1.
func OnPanic() {
	p := recover()
	if p == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "lockbench adapter: panic: %v\n%s", p, debug.Stack())
	if !readySaid {
		NotReady(fmt.Sprintf("panic: %v", p))
	}
	exit(1)
}

// Serve answers requests in order, one at a time, until stdin closes; then onClose (nil:
// nothing), and exit 0.
func Serve(handlers Handlers, onClose func()) {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadString('\n')
		if strings.TrimSpace(line) != "" {
			answer := answerLine(handlers, line)
			if serr := Say(answer); serr != nil {
				var unsupported *json.UnsupportedValueError
				var unsupportedType *json.UnsupportedTypeError
				if errors.As(serr, &unsupported) || errors.As(serr, &unsupportedType) || errors.As(serr, new(*json.MarshalerError)) {
					Say(Answer{"ok": false, "error": Describe(serr)}) // an answer JSON cannot carry
				} else { // the pipe is gone: lockbench is too
					fmt.Fprintf(os.Stderr, "lockbench adapter: cannot answer: %v\n", serr)
					exit(1)
				}
			}
			runAfterAnswer()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockbench adapter: reading stdin: %v\n", err)
			break
		}
	}
	if onClose != nil {
		func() {
			defer func() { // the answers are all given; the exit stays clean
				if p := recover(); p != nil {
					fmt.Fprintf(os.Stderr, "lockbench adapter: panic on close: %v\n%s", p, debug.Stack())
				}
			}()
			onClose()
		}()
	}
	exit(0)
}

func runAfterAnswer() {
	afterMu.Lock()
	queue := afterQueue
	afterQueue = nil
	afterMu.Unlock()
	for _, f := range queue {
		func() {
			defer func() {
				if p := recover(); p != nil {
					fmt.Fprintf(os.Stderr, "lockbench adapter: panic after an answer (the adapter goes on): %v\n%s", p, debug.Stack())
				}
			}()
			f()
		}()
	}
}

func shorten(line string) string {
	line = strings.TrimSpace(line)
	if len(line) > 200 {
		return line[:200]
	}
	return line
}

func answerLine(handlers Handlers, line string) (answer Answer) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		var whatever any
		if json.Unmarshal([]byte(line), &whatever) == nil { // JSON, but not an object
			return Answer{"ok": false, "error": "not a request (no op): " + shorten(line)}
		}
		return Answer{"ok": false, "error": "not JSON: " + shorten(line)}
	}
	op, ok := raw["op"].(string)
	if !ok {
		return Answer{"ok": false, "error": "not a request (no op): " + shorten(line)}
	}
	handler := handlers[op]
	if handler == nil {
		return Answer{"ok": false, "error": op + " is not supported"}
	}
	req := Request{Op: op, Raw: raw}
	var fields struct {
		Key     *string  `json:"key"`
		TTLMs   *float64 `json:"ttl_ms"`
		WaitMs  *float64 `json:"wait_ms"`
		Replace *bool    `json:"replace"`
	}
	if err := json.Unmarshal([]byte(line), &fields); err != nil {
		return Answer{"ok": false, "error": "a malformed " + op + " request: " + Describe(err)}
	}
	if fields.Key != nil {
		req.Key = *fields.Key
	}
	if fields.TTLMs != nil {
		req.TTLMs = *fields.TTLMs
	}
	if fields.WaitMs != nil {
		req.WaitMs = *fields.WaitMs
	}
	if fields.Replace != nil {
		req.Replace = *fields.Replace
	}
	defer func() { // a request that fails fails alone: the adapter goes on answering
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "lockbench adapter: panic in %s (answered as an error): %v\n%s", op, p, debug.Stack())
			answer = Answer{"ok": false, "error": fmt.Sprintf("panic: %v", p)}
		}
	}()
	answer, err := handler(req)
	if err != nil {
		return Answer{"ok": false, "error": Describe(err)}
	}
	if _, ok := answer["ok"].(bool); !ok {
		shown, _ := json.Marshal(answer)
		return Answer{"ok": false, "error": fmt.Sprintf("%s answered %s, not {\"ok\": true|false, ...}", op, shown)}
	}
	return answer
}

func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func readEnv(get func(string) string) (*Settings, error) {
	s := &Settings{AddressMap: map[string]Address{}}
	number := func(name string, into *int) error {
		text := get(name)
		if text == "" {
			return nil
		}
		n, err := strconv.Atoi(text)
		if err != nil {
			return fmt.Errorf("%s is not a whole number: %q", name, text)
		}
		*into = n
		return nil
	}
	addresses := func(name string) ([]Address, error) {
		var list []Address
		for _, text := range strings.Split(get(name), ",") {
			if text == "" {
				continue
			}
			a, err := parseAddress(text)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			list = append(list, a)
		}
		return list, nil
	}
	var err error
	if s.Nodes, err = addresses("LOCKBENCH_NODES"); err != nil {
		return nil, err
	}
	s.Key = get("LOCKBENCH_KEY")
	s.ClientGiven = get("LOCKBENCH_CLIENT") != ""
	for name, into := range map[string]*int{
		"LOCKBENCH_CLIENT": &s.Client, "LOCKBENCH_TTL_MS": &s.TTLMs,
		"LOCKBENCH_COMMAND_TIMEOUT_MS": &s.CommandTimeoutMs, "LOCKBENCH_OP_TIMEOUT_MS": &s.OpTimeoutMs,
		"LOCKBENCH_CONNECT_TIMEOUT_MS": &s.ConnectTimeoutMs,
	} {
		if err := number(name, into); err != nil {
			return nil, err
		}
	}
	params := get("LOCKBENCH_PARAMS")
	if params == "" {
		params = "{}"
	}
	if err := json.Unmarshal([]byte(params), &s.Params); err != nil || s.Params == nil {
		return nil, fmt.Errorf("LOCKBENCH_PARAMS is not an object: %s", params)
	}
	s.ParamsJSON = json.RawMessage(params)
	if s.Sentinels, err = addresses("LOCKBENCH_SENTINELS"); err != nil {
		return nil, err
	}
	s.MasterName = get("LOCKBENCH_MASTER_NAME")
	if text := get("LOCKBENCH_ADDRESS_MAP"); text != "" {
		var m map[string]string
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			return nil, fmt.Errorf("LOCKBENCH_ADDRESS_MAP: %w", err)
		}
		for from, to := range m {
			a, err := parseAddress(to)
			if err != nil {
				return nil, fmt.Errorf("LOCKBENCH_ADDRESS_MAP: %w", err)
			}
			s.AddressMap[from] = a
		}
	}
	return s, nil
}

func parseAddress(text string) (Address, error) {
	at := strings.LastIndex(text, ":")
	if at < 0 {
		return Address{}, fmt.Errorf("%q is not host:port", text)
	}
	port, err := strconv.Atoi(text[at+1:])
	if err != nil {
		return Address{}, fmt.Errorf("%q is not host:port", text)
	}
	return Address{text[:at], port}, nil
}
