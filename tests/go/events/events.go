// Package events prints what a judge program does or sees as JSON lines on stdout, one event a
// line, which tests/interop/test_go_transactions.py reads as it happens.
package events

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

var mu sync.Mutex

// Emit prints one event: {"event": kind, ...fields}.
func Emit(kind string, fields map[string]any) {
	line := map[string]any{"event": kind}
	for k, v := range fields {
		line[k] = v
	}
	out, err := json.Marshal(line)
	if err != nil {
		Fail("encoding an event", err)
	}
	mu.Lock()
	defer mu.Unlock()
	os.Stdout.Write(append(out, '\n'))
}

// Fail reports an error as an event and on stderr, then exits 1.
func Fail(what string, err error) {
	mu.Lock()
	line, _ := json.Marshal(map[string]any{"event": "error", "what": what, "error": err.Error()})
	os.Stdout.Write(append(line, '\n'))
	mu.Unlock()
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}
