package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/gorilla/websocket"
)

// TestAuthorQueuesRouteEveryEventToItsAuthor: each event lands in exactly
// one queue, its author's, and each queue keeps the corpus order.
func TestAuthorQueuesRouteEveryEventToItsAuthor(t *testing.T) {
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	queues, err := authorQueues(c.Events, c.Authors)
	if err != nil {
		t.Fatal(err)
	}
	if len(queues) != len(c.Authors) {
		t.Fatalf("%d queues for %d authors", len(queues), len(c.Authors))
	}
	seen := make([]int, len(c.Events))
	for k, q := range queues {
		if !slices.IsSorted(q) {
			t.Errorf("queue %d is not in corpus order", k)
		}
		for _, i := range q {
			seen[i]++
			if got := c.Events[i].Ev.PubKey; got != c.Authors[k].Pub {
				t.Errorf("event %d (author %s) queued for author %d (%s)", i, got, k, c.Authors[k].Pub)
			}
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("event %d queued %d times", i, n)
		}
	}
	stranger := c.Extras[:1] // a live author, not a main one
	if _, err := authorQueues(stranger, c.Authors); err == nil {
		t.Error("an event by a non-corpus author was queued")
	}
}

// TestIngestAuthPerAuthor publishes the corpus with -auth-per-author into
// a relay that requires AUTH and checks, in the relay, that each event
// arrived on a connection authenticated as its author and nobody else, in
// both ingest modes; REQ (concurrent: one connection per author) and COUNT
// connections authenticate too.
func TestIngestAuthPerAuthor(t *testing.T) {
	var mu sync.Mutex
	var wrong []string
	arrived := map[string]int{}
	policy := func(ctx context.Context, _ tenant.TenantContext, ev *nostr.Event) error {
		v, ok := buzz.ConnFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		arrived[ev.ID]++
		if !ok || !slices.Equal(v.Pubkeys(), []string{ev.PubKey}) {
			wrong = append(wrong, fmt.Sprintf("event by %s on a connection authenticated as %v", ev.PubKey, v.Pubkeys()))
			return errors.New("restricted: wrong connection")
		}
		return nil
	}
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int{1, 8} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			mu.Lock()
			clear(arrived)
			mu.Unlock()
			url := startTestRelay(t, buzz.WithAuth(buzz.AuthRequired), buzz.WithEventPolicy(policy))
			cfg := &config{Conns: 4, Window: window, Reqs: 14, AuthPerAuthor: true}
			e := &env{cfg: cfg, c: c, target: &target{URL: url}, queries: c.planQueries(0, 2), counts: c.planCounts(0, 1)}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ing := metricsOf(t, runIngest(ctx, e, window))
			if ing["accepted"] != float64(len(c.Events)) {
				t.Errorf("ingest: %v", ing)
			}
			mu.Lock()
			if len(arrived) != len(c.Events) {
				t.Errorf("%d distinct events arrived, want %d", len(arrived), len(c.Events))
			}
			for id, n := range arrived {
				if n != 1 {
					t.Errorf("event %s arrived %d times", id, n)
				}
			}
			if len(wrong) > 0 {
				t.Errorf("%d events on a wrong connection, e.g. %s", len(wrong), wrong[0])
			}
			mu.Unlock()
			metricsOf(t, runReq(ctx, e))
			metricsOf(t, runCount(ctx, e))
		})
	}
}

// TestAuthPerAuthorNeedsAChallenge: under -auth-per-author a connection
// authenticates as its key, and a relay that never challenges cannot be
// measured as authenticated.
func TestAuthPerAuthorNeedsAChallenge(t *testing.T) {
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cfg: &config{Conns: 2, AuthPerAuthor: true}, c: c, target: &target{URL: startTestRelay(t)}}
	conn, err := e.dial(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	conn.mu.Lock()
	authed := conn.authed[c.Authors[0].Pub]
	conn.mu.Unlock()
	conn.Close()
	if !authed {
		t.Error("connection 0 is not authenticated as author 0")
	}

	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer silent.Close()
	e.target.URL = "ws" + strings.TrimPrefix(silent.URL, "http")
	if conn, err := e.dial(context.Background(), 0); err == nil {
		conn.Close()
		t.Error("dial succeeded against a relay that never challenges")
	}
}

func TestAuthPerAuthorLabels(t *testing.T) {
	cfg, err := parseFlags([]string{"-auth-per-author", "-url", "ws://localhost:1", "-name", "buzzd", "-b", "ws://localhost:2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AuthPerAuthor || cfg.A.Label != "buzzd"+authLabelSuffix || cfg.B.Label != "localhost:2"+authLabelSuffix {
		t.Fatalf("labels %q, %q", cfg.A.Label, cfg.B.Label)
	}
}

// TestAuthPerAuthorFigures: a -auth-per-author run's merged rows say how it
// connected and carry the concurrent REQ-by-ids tail; an anonymous run's
// carry only the sequential one.
func TestAuthPerAuthorFigures(t *testing.T) {
	run := []result{
		{Scenario: "ingest", Metrics: []metric{{Name: "events_per_s", Value: 100}}},
		{Scenario: "req", Metrics: []metric{{Name: "seq_ids_p99", Value: 2}, {Name: "conc_ids_p99", Value: 3}}},
	}
	names := func(cfg *config) map[string]float64 {
		out := map[string]float64{}
		for row, v := range runFigures(cfg, run) {
			out[row.name] = v
		}
		return out
	}
	auth := names(&config{Conns: 16, Window: 64, AuthPerAuthor: true})
	if auth["ingest, one authenticated connection per author, 1 event in flight each"] != 100 ||
		auth["REQ p99, ids (sequential, right after ingest)"] != 2 ||
		auth["REQ p99, ids (concurrent, one authenticated connection per author)"] != 3 {
		t.Errorf("auth rows: %v", auth)
	}
	anon := names(&config{Conns: 16, Window: 64})
	if anon["ingest, 16 connections, 1 event in flight each"] != 100 ||
		anon["REQ p99, ids (sequential, right after ingest)"] != 2 || len(anon) != 3 {
		t.Errorf("anonymous rows: %v", anon)
	}
}
