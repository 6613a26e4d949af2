package storetest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The kill test: a parent test re-executes its own test binary as a child
// that saves events and prints "ACK <id>" for each one only after Save
// returned nil; the parent kills the child with SIGKILL mid-stream, reopens
// the store the child wrote and requires every acknowledged event to be
// there. A backend that acknowledges before its writes are durable fails it
// (given enough acknowledgements in flight when the kill lands).
//
// In the parent:
//
//	acked := storetest.KillAfterAcks(t, "TestKillChild", envDir, dir, 300)
//	s := reopen(dir)
//	c, err := s.LookupHost(ctx, host)
//	…
//	storetest.RequireStored(t, s, c, acked)
//
// and in the child test, which skips unless envDir is set:
//
//	storetest.SaveAndAck(ctx, t, s, c, 8, func(w, i int) string { … })

// ackPrefix starts each line of the child's standard output that
// acknowledges an event.
const ackPrefix = "ACK "

// KillAfterAcks runs the test binary again as a child running only the
// test named child, with envVar=dir added to its environment. Once the
// child has acknowledged n events it is killed with SIGKILL; what it
// printed before it died is read too. It returns every acknowledged id.
// It fails t if the child exits before it is killed, or acknowledges fewer
// than n events within two minutes.
func KillAfterAcks(t *testing.T, child, envVar, dir string, n int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), envVar+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var acked []string
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(2 * time.Minute)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), ackPrefix); ok {
			acked = append(acked, id)
		}
		if len(acked) == n {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child acknowledged %d events in two minutes, fewer than %d", len(acked), n)
		}
	}
	// What the child printed before it died was acknowledged too.
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), ackPrefix); ok {
			acked = append(acked, id)
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("child exited before it was killed, after %d acks", len(acked))
	}
	return acked
}

// SaveAndAck is the child's side of KillAfterAcks: workers goroutines save
// kind-1 events of their own authors into community c of s, with the
// content content(worker, i) for their i-th event, and each event's id is
// printed on standard output once its Save returned nil. A worker whose
// Save fails prints the error on standard error and stops. It returns when
// ctx ends; a child is killed long before.
func SaveAndAck(ctx context.Context, tb testing.TB, s store.EventStore, c tenant.CommunityID, workers int, content func(worker, i int) string) {
	tb.Helper()
	authors := NewAuthors(tb, workers)
	acks := make(chan string, 1024)
	for w := range workers {
		go func() {
			for i := 0; ctx.Err() == nil; i++ {
				ev := authors[w].Unsigned(1, time.Now().Unix(), content(w, i), nostr.Tag{"t", "kill"})
				if err := s.Save(ctx, c, ev); err != nil {
					fmt.Fprintln(os.Stderr, "child save:", err)
					return
				}
				select {
				case acks <- ev.ID:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	// One printer, so lines never interleave; each line is written (an
	// unbuffered write to the pipe) only after its Save returned nil.
	for {
		select {
		case id := <-acks:
			fmt.Fprintf(os.Stdout, "%s%s\n", ackPrefix, id)
		case <-ctx.Done():
			return
		}
	}
}

// RequireStored fails tb unless every id of acked is stored in community
// c of s.
func RequireStored(tb testing.TB, s store.EventStore, c tenant.CommunityID, acked []string) {
	tb.Helper()
	got := map[string]bool{}
	for _, id := range QueryIDs(tb, s, c, nostr.Filter{IDs: acked}) {
		got[id] = true
	}
	missing := 0
	for _, id := range acked {
		if !got[id] {
			missing++
		}
	}
	if missing > 0 {
		tb.Fatalf("%d of %d acknowledged events lost after kill -9", missing, len(acked))
	}
	tb.Logf("%d acknowledged events all present after kill -9", len(acked))
}
