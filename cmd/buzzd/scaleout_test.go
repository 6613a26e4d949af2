package main

// Scale-out tests: several buzzd processes share one PostgreSQL database and
// one Redis and must behave as one relay. They need both services; with
// CI=true a missing one fails the test instead of skipping it.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/gorilla/websocket"
	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/store/postgres"
)

const (
	hostAlpha = "alpha.scaleout.test"
	hostBeta  = "beta.scaleout.test"
	hostOps   = "ops.scaleout.test" // the operator API's origin host
)

// requireRedis checks that a Redis answers at addr: otherwise the test
// skips, or fails when CI=true (testenv's rule).
func requireRedis(t *testing.T, addr string) {
	t.Helper()
	if err := testenv.PingRedis(addr); err != nil {
		testenv.Unavailable(t, "Redis at "+addr, err)
	}
}

// redisServer is a redis-server child process the test may kill and restart.
type redisServer struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func (r *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// startRedisServer runs a private, non-persistent redis-server on a free
// port. Without the binary the test skips (fails when CI=true).
func startRedisServer(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Unavailable(t, "redis-server (the binary)", err)
	}
	r := &redisServer{t: t, port: freePort(t)}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan struct{})
	r.done = done
	cmd := r.cmd
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for testenv.PingRedis(r.addr()) != nil {
		if time.Now().After(deadline) {
			r.t.Fatal("redis-server did not answer within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *redisServer) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
	default:
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
	}
}

// pod is one buzzd of a scale-out deployment.
type pod struct {
	*buzzdProc
	name string
}

// deployment is N buzzd pods over one database and one Redis.
type deployment struct {
	pods  []*pod
	dbURL string
}

// startDeployment migrates dbURL, maps hostBeta to a second community
// through a store opened here, and starts n pods serving hostAlpha (their
// RELAY_URL) and hostBeta, sharing redisURL under a random namespace.
func startDeployment(t *testing.T, n int, dbURL, redisURL string, extra map[string]string) *deployment {
	t.Helper()
	bin := buildBuzzd(t)
	mig := exec.Command(bin, "migrate")
	mig.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "DATABASE_URL=" + dbURL}
	if out, err := mig.CombinedOutput(); err != nil {
		t.Fatalf("buzzd migrate: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(ctx, hostBeta); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()

	var nsb [6]byte
	_, _ = rand.Read(nsb[:])
	ns := "buzztest." + hex.EncodeToString(nsb[:])
	d := &deployment{dbURL: dbURL}
	for i := range n {
		settings := map[string]string{
			"RELAY_URL":            "ws://" + hostAlpha,
			"DATABASE_URL":         dbURL,
			"BUZZ_DB_MAX_CONNS":    "8",
			"REDIS_URL":            redisURL,
			"BUZZ_REDIS_NAMESPACE": ns,
			"BUZZ_POD_NAME":        fmt.Sprintf("pod-%d-%s", i, ns),
			"BUZZ_LOG_LEVEL":       "warn",
		}
		for k, v := range extra {
			settings[k] = v
		}
		p := &pod{buzzdProc: startBuzzd(t, freePort(t), settings), name: settings["BUZZ_POD_NAME"]}
		d.pods = append(d.pods, p)
	}
	for _, p := range d.pods {
		p.waitReady(t, 30*time.Second)
	}
	return d
}

// readyz returns the status code and body of the pod's /readyz.
func (p *pod) readyz() (int, map[string]any, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(p.port) + "/readyz")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body map[string]any
	err = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body, err
}

func (p *pod) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body, err := p.readyz()
		if err == nil && code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %v: %d %v %v", p.name, timeout, code, body, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// operatorCall signs a NIP-98 request to the operator API on this pod.
func (p *pod) operatorCall(t *testing.T, sk, method, path string, body any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	return p.operatorRaw(t, method, path, raw, nip98Header(t, sk, "http://"+hostOps+path, method, raw))
}

func (p *pod) operatorRaw(t *testing.T, method, path string, raw []byte, auth string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:"+strconv.Itoa(p.port)+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = hostOps
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s %s: not JSON: %v", method, path, err)
	}
	return resp.StatusCode, m
}

// waitHost waits until the pod serves host (its negative host cache may
// remember it as unmapped for a moment after it was provisioned).
func (p *pod) waitHost(t *testing.T, host string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		ws, _, err := d.Dial("ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {host}})
		if err == nil {
			ws.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve %s: %v", p.name, host, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dial opens a client on the pod naming host in the Host header.
func (p *pod) dial(t *testing.T, host string) *client {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.Dial("ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {host}})
	if err != nil {
		t.Fatalf("dial %s on %s: %v", host, p.name, err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &client{ws: ws}
	// The AUTH challenge comes first; once it is read, the pod has
	// subscribed to the community's Redis topic.
	if _, err := c.next(); err != nil {
		t.Fatalf("read challenge on %s: %v", p.name, err)
	}
	return c
}

// subscriber counts the live events one subscription receives.
type subscriber struct {
	name   string
	mu     sync.Mutex
	counts map[string]int
	total  int
	err    error
	done   chan struct{}
}

// subscribe opens a live subscription with filter on a new connection and
// counts what arrives after EOSE until the connection is closed.
func subscribe(t *testing.T, p *pod, host, name string, filter gonostr.Filter) *subscriber {
	t.Helper()
	c := p.dial(t, host)
	if err := c.send(&gonostr.ReqEnvelope{SubscriptionID: "live", Filters: gonostr.Filters{filter}}); err != nil {
		t.Fatal(err)
	}
	for {
		env, err := c.next()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e, ok := env.(*gonostr.EOSEEnvelope); ok && string(*e) == "live" {
			break
		}
	}
	s := &subscriber{name: name, counts: map[string]int{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			_ = c.ws.SetReadDeadline(time.Time{})
			_, msg, err := c.ws.ReadMessage()
			if err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
				return
			}
			env := gonostr.ParseMessage(string(msg))
			if e, ok := env.(*gonostr.EventEnvelope); ok {
				s.mu.Lock()
				s.counts[e.Event.ID]++
				s.total++
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { c.ws.Close(); <-s.done })
	return s
}

func (s *subscriber) snapshot() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts), s.total
}

// waitCount waits until s has received every id of want (or times out),
// then a little longer to catch duplicates.
func (s *subscriber) waitCount(t *testing.T, want []string, timeout time.Duration) map[string]int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		counts, _ := s.snapshot()
		missing := 0
		for _, id := range want {
			if counts[id] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %d of %d events never arrived", s.name, missing, len(want))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a duplicate would arrive within this
	counts, _ := s.snapshot()
	return counts
}

func signEvents(t *testing.T, sk string, n, kind int, tag string) []gonostr.Event {
	t.Helper()
	now := time.Now().Unix()
	out := make([]gonostr.Event, n)
	for i := range out {
		out[i] = signed(t, sk, kind, now, fmt.Sprintf("%s %d", tag, i), gonostr.Tags{{"t", tag}})
	}
	return out
}

// queryIDs asks the pod for the given ids (in chunks) and returns those found.
func queryIDs(t *testing.T, c *client, ids []string) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	for chunk := range slices.Chunk(ids, 200) {
		got, err := c.query(gonostr.Filter{IDs: chunk, Limit: len(chunk)})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range got {
			found[ev.ID] = true
		}
	}
	return found
}

// TestScaleOut runs three pods on the shared PostgreSQL and Redis: every
// subscriber on every pod gets each matching event exactly once and never
// one of the other community; ephemeral events cross pods unstored; when
// one pod is killed the others keep serving and lose no acknowledged event.
func TestScaleOut(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	dbURL := freshDatabase(t)
	opSK, opPK := newKey(t)
	d := startDeployment(t, 3, dbURL, "redis://127.0.0.1:6379", map[string]string{
		"RELAY_OPERATOR_PUBKEYS":    opPK,
		"RELAY_OPERATOR_API_ORIGIN": "http://" + hostOps,
		// Long host caches: a change is seen within a test's patience only
		// because the control bus reached every pod.
		"BUZZ_HOST_CACHE_TTL":          "1h",
		"BUZZ_HOST_NEGATIVE_CACHE_TTL": "1m",
	})

	// Subscribers: two of alpha and one of beta on every pod.
	const perPub = 20
	filter := gonostr.Filter{Kinds: []int{1}, Tags: gonostr.TagMap{"t": {"fanout"}}}
	var alphaSubs, betaSubs []*subscriber
	for i, p := range d.pods {
		for j := range 2 {
			alphaSubs = append(alphaSubs, subscribe(t, p, hostAlpha, fmt.Sprintf("alpha sub %d/%d", i, j), filter))
		}
		betaSubs = append(betaSubs, subscribe(t, p, hostBeta, fmt.Sprintf("beta sub %d", i), filter))
	}

	// Publishers: one per community on every pod, concurrently.
	var (
		mu       sync.Mutex
		alphaIDs []string
		betaIDs  []string
		wg       sync.WaitGroup
	)
	for _, p := range d.pods {
		for _, host := range []string{hostAlpha, hostBeta} {
			sk, _ := newKey(t)
			evs := signEvents(t, sk, perPub, 1, "fanout")
			c := p.dial(t, host)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, ev := range evs {
					if err := c.publish(ev); err != nil {
						t.Errorf("publish on %s %s: %v", p.name, host, err)
						return
					}
					mu.Lock()
					if host == hostAlpha {
						alphaIDs = append(alphaIDs, ev.ID)
					} else {
						betaIDs = append(betaIDs, ev.ID)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	check := func(subs []*subscriber, want, forbidden []string) {
		t.Helper()
		bad := map[string]bool{}
		for _, id := range forbidden {
			bad[id] = true
		}
		deadline := time.Now().Add(20 * time.Second) // shared: a failure fails fast
		for _, s := range subs {
			counts := s.waitCount(t, want, time.Until(deadline))
			for id, n := range counts {
				switch {
				case bad[id]:
					t.Errorf("%s received an event of the other community", s.name)
				case n != 1:
					t.Errorf("%s received event %s %d times", s.name, id, n)
				}
			}
			if len(counts) != len(want) && !t.Failed() {
				t.Errorf("%s received %d distinct events, want %d", s.name, len(counts), len(want))
			}
		}
	}
	check(alphaSubs, alphaIDs, betaIDs)
	check(betaSubs, betaIDs, alphaIDs)
	t.Logf("%d alpha and %d beta events, each delivered once to %d and %d subscribers on 3 pods",
		len(alphaIDs), len(betaIDs), len(alphaSubs), len(betaSubs))

	// Ephemeral events cross pods and are never stored.
	t.Run("ephemeral", func(t *testing.T) {
		ephFilter := gonostr.Filter{Kinds: []int{20555}}
		var subs []*subscriber
		for i, p := range d.pods[1:] {
			subs = append(subs, subscribe(t, p, hostAlpha, fmt.Sprintf("ephemeral sub on pod %d", i+1), ephFilter))
		}
		betaEph := subscribe(t, d.pods[2], hostBeta, "beta ephemeral sub", ephFilter)
		sk, _ := newKey(t)
		evs := signEvents(t, sk, 5, 20555, "eph")
		pub := d.pods[0].dial(t, hostAlpha)
		var ids []string
		for _, ev := range evs {
			if err := pub.publish(ev); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		}
		for _, s := range subs {
			for id, n := range s.waitCount(t, ids, 10*time.Second) {
				if n != 1 {
					t.Errorf("%s received %s %d times", s.name, id, n)
				}
			}
		}
		if _, total := betaEph.snapshot(); total != 0 {
			t.Errorf("beta received %d of alpha's ephemeral events", total)
		}
		for _, p := range d.pods {
			if found := queryIDs(t, p.dial(t, hostAlpha), ids); len(found) != 0 {
				t.Errorf("%s: REQ returned %d ephemeral events", p.name, len(found))
			}
		}
	})

	// The operator API on one pod archives a community: its sockets on
	// every pod close; a NIP-98 header used on one pod is refused as a
	// replay on another (the guard is shared in Redis).
	t.Run("archive and replay across pods", func(t *testing.T) {
		const host = "gamma.scaleout.test"
		_, owner := newKey(t)
		st, body := d.pods[0].operatorCall(t, opSK, "POST", "/operator/communities", map[string]any{"host": host, "initial_owner_pubkey": owner})
		if st != http.StatusCreated {
			t.Fatalf("create: %d %v", st, body)
		}
		var socks []*client
		for _, p := range d.pods {
			p.waitHost(t, host)
			socks = append(socks, p.dial(t, host))
		}
		path := "/operator/communities/archive"
		raw, _ := json.Marshal(map[string]any{"host": host, "owner_pubkey": owner})
		auth := nip98Header(t, opSK, "http://"+hostOps+path, "POST", raw)
		if st, body := d.pods[1].operatorRaw(t, "POST", path, raw, auth); st != http.StatusOK || body["status"] != "archived" {
			t.Fatalf("archive: %d %v", st, body)
		}
		for i, c := range socks {
			_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				_, _, err := c.ws.ReadMessage()
				if err == nil {
					continue
				}
				var ce *websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
					t.Errorf("pod %d: archived community's socket ended with %v, want close 1008", i, err)
				}
				break
			}
		}
		// No pod binds the archived host again, though each had it cached.
		for _, p := range d.pods {
			dl := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			ws, resp, err := dl.Dial("ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {host}})
			if err == nil {
				ws.Close()
				t.Errorf("%s still serves the archived community", p.name)
			} else if resp == nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: dial archived community: %v", p.name, err)
			}
		}
		if st, body := d.pods[2].operatorRaw(t, "POST", path, raw, auth); st != http.StatusUnauthorized {
			t.Fatalf("replayed NIP-98 header on another pod: %d %v", st, body)
		}

		// Unarchiving on one pod takes effect at once on every pod,
		// though each fenced the community and none has a connection to it.
		if st, body := d.pods[2].operatorCall(t, opSK, "POST", "/operator/communities/unarchive", map[string]any{"host": host, "owner_pubkey": owner}); st != http.StatusOK || body["status"] != "unarchived" {
			t.Fatalf("unarchive: %d %v", st, body)
		}
		// The pod that served it binds the very next upgrade; the others
		// once the control bus told them (each caches hosts for an hour and
		// fenced the community for as long: only the bus can lift it).
		d.pods[2].dial(t, host)
		for _, p := range d.pods[:2] {
			p.waitHost(t, host)
		}
	})

	// A host every pod has just cached as unmapped is served by every pod
	// as soon as another pod provisions it.
	t.Run("provision takes effect at once on every pod", func(t *testing.T) {
		const host = "delta.scaleout.test"
		for _, p := range d.pods {
			dl := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			if ws, resp, err := dl.Dial("ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {host}}); err == nil {
				ws.Close()
				t.Fatalf("%s serves an unprovisioned host", p.name)
			} else if resp == nil || resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s: dial unprovisioned host: %v", p.name, err)
			}
		}
		_, owner := newKey(t)
		if st, body := d.pods[1].operatorCall(t, opSK, "POST", "/operator/communities", map[string]any{"host": host, "initial_owner_pubkey": owner}); st != http.StatusCreated {
			t.Fatalf("create: %d %v", st, body)
		}
		d.pods[1].dial(t, host)
		for _, p := range d.pods {
			p.waitHost(t, host) // each caches "unmapped" for a minute
		}
	})

	// Kill one pod mid-load: the others keep serving, nothing acknowledged
	// is lost.
	t.Run("kill one pod", func(t *testing.T) {
		survivorSub := subscribe(t, d.pods[1], hostAlpha, "survivor sub", gonostr.Filter{Kinds: []int{1}, Tags: gonostr.TagMap{"t": {"kill"}}})
		var (
			mu     sync.Mutex
			acked  []string
			wg     sync.WaitGroup
			killed = make(chan struct{})
			once   sync.Once
		)
		victim := d.pods[2]
		type publisher struct {
			i   int
			p   *pod
			c   *client
			evs []gonostr.Event
		}
		var pubs []publisher // all connected before the load starts
		for i, p := range d.pods {
			for range 2 {
				sk, _ := newKey(t)
				pubs = append(pubs, publisher{i, p, p.dial(t, hostAlpha), signEvents(t, sk, 60, 1, "kill")})
			}
		}
		for _, pb := range pubs {
			i, p, c, evs := pb.i, pb.p, pb.c, pb.evs
			{
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, ev := range evs {
						if err := c.publish(ev); err != nil {
							if i != 2 {
								t.Errorf("publish on surviving %s: %v", p.name, err)
							}
							return // the killed pod: not acknowledged
						}
						mu.Lock()
						acked = append(acked, ev.ID)
						n := len(acked)
						mu.Unlock()
						if n == 100 {
							once.Do(func() {
								_ = victim.cmd.Process.Signal(syscall.SIGKILL)
								close(killed)
							})
						}
					}
				}()
			}
		}
		wg.Wait()
		select {
		case <-killed:
		default:
			t.Fatal("the load ended before the pod was killed")
		}
		<-victim.done
		mu.Lock()
		ids := slices.Clone(acked)
		mu.Unlock()
		for _, p := range d.pods[:2] {
			found := queryIDs(t, p.dial(t, hostAlpha), ids)
			if len(found) != len(ids) {
				t.Errorf("%s: REQ returns %d of %d acknowledged events", p.name, len(found), len(ids))
			}
		}
		// Live delivery between the survivors still works.
		sk, _ := newKey(t)
		after := signEvents(t, sk, 3, 1, "kill")
		pub := d.pods[0].dial(t, hostAlpha)
		var afterIDs []string
		for _, ev := range after {
			if err := pub.publish(ev); err != nil {
				t.Fatal(err)
			}
			afterIDs = append(afterIDs, ev.ID)
		}
		counts := survivorSub.waitCount(t, afterIDs, 10*time.Second)
		for _, id := range afterIDs {
			if counts[id] != 1 {
				t.Errorf("after the kill, survivor got %s %d times", id, counts[id])
			}
		}
		t.Logf("%d events acknowledged across the kill, all served by the survivors", len(ids))
	})
}

// TestScaleOutRedisRestart loses and restarts Redis under load: pods report
// not ready while it is down, keep acknowledging (stored) events, and
// resume live delivery afterwards; REQ returns every acknowledged event.
func TestScaleOutRedisRestart(t *testing.T) {
	rs := startRedisServer(t)
	dbURL := freshDatabase(t)
	d := startDeployment(t, 2, dbURL, "redis://"+rs.addr(), nil)

	filter := gonostr.Filter{Kinds: []int{1}, Tags: gonostr.TagMap{"t": {"restart"}}}
	sub := subscribe(t, d.pods[1], hostAlpha, "sub on pod 1", filter)
	sk, _ := newKey(t)
	evs := signEvents(t, sk, 400, 1, "restart")
	pub := d.pods[0].dial(t, hostAlpha)

	var acked []string
	publish := func(ev gonostr.Event) {
		t.Helper()
		if err := pub.publish(ev); err != nil {
			t.Fatalf("publish: %v", err)
		}
		acked = append(acked, ev.ID)
	}
	next := 0
	for ; next < 20; next++ {
		publish(evs[next])
	}
	sub.waitCount(t, acked, 10*time.Second)

	rs.kill()
	// Events published while Redis is down are still stored and acknowledged.
	degraded := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for len(degraded) < len(d.pods) {
		if time.Now().After(deadline) {
			t.Fatalf("pods not reporting degraded: %v", degraded)
		}
		publish(evs[next])
		next++
		for _, p := range d.pods {
			code, body, err := p.readyz()
			if err == nil && code == http.StatusServiceUnavailable {
				if checks, _ := body["checks"].(map[string]any); checks["broker"] == "unavailable" && body["status"] == "degraded" {
					degraded[p.name] = true
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 20 {
		publish(evs[next])
		next++
	}

	rs.start()
	for _, p := range d.pods {
		p.waitReady(t, 30*time.Second)
	}
	// Delivery resumes: events published now reach the other pod.
	var resumed []string
	for range 20 {
		publish(evs[next])
		resumed = append(resumed, evs[next].ID)
		next++
	}
	counts := sub.waitCount(t, resumed, 15*time.Second)
	for _, id := range resumed {
		if counts[id] != 1 {
			t.Errorf("after the restart, event %s delivered %d times", id, counts[id])
		}
	}
	for id, n := range counts {
		if n > 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	// Nothing acknowledged is lost, on either pod.
	for _, p := range d.pods {
		found := queryIDs(t, p.dial(t, hostAlpha), acked)
		if len(found) != len(acked) {
			t.Errorf("%s: REQ returns %d of %d acknowledged events", p.name, len(found), len(acked))
		}
	}
	t.Logf("%d events acknowledged across a Redis restart", len(acked))
}

// TestScaleOutRateLimitShared bursts one pubkey's events across two pods:
// the limit is reached at the same total as on one pod.
func TestScaleOutRateLimitShared(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	dbURL := freshDatabase(t)
	const limit = 10
	d := startDeployment(t, 2, dbURL, "redis://127.0.0.1:6379", map[string]string{
		"BUZZ_RATE_LIMIT_EVENTS": strconv.Itoa(limit),
		"BUZZ_RATE_LIMIT_WINDOW": "1h",
	})
	clients := []*client{d.pods[0].dial(t, hostAlpha), d.pods[1].dial(t, hostAlpha)}
	sk, _ := newKey(t)
	evs := signEvents(t, sk, 2*limit, 1, "burst")
	accepted, limited := 0, 0
	for i, ev := range evs {
		err := clients[i%2].publish(ev)
		switch {
		case err == nil:
			accepted++
		case strings.Contains(err.Error(), "rate-limited: "):
			limited++
		default:
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if accepted != limit || limited != limit {
		t.Fatalf("alternating pods: %d accepted, %d rate-limited; want %d and %d (one shared limit)", accepted, limited, limit, limit)
	}
	// Another author, and the same author in the other community, have
	// their own quotas.
	other, _ := newKey(t)
	if err := clients[0].publish(signed(t, other, 1, time.Now().Unix(), "other author", nil)); err != nil {
		t.Fatal(err)
	}
	if err := d.pods[1].dial(t, hostBeta).publish(signed(t, sk, 1, time.Now().Unix(), "other community", nil)); err != nil {
		t.Fatal(err)
	}
}
