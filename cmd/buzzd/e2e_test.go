package main

// End-to-end tests: they build the buzzd binary, run it as a separate
// process on a free loopback port, and talk to it with the independent
// go-nostr client and raw WebSockets.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"

	"github.com/gorilla/websocket"
	gonostr "github.com/nbd-wtf/go-nostr"
)

// buzzdBinary is the path of the binary built once for this test run.
var buzzdBinary struct {
	once sync.Once
	path string
	err  error
	dir  string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buzzdBinary.dir != "" {
		os.RemoveAll(buzzdBinary.dir)
	}
	os.Exit(code)
}

// buildBuzzd builds cmd/buzzd once per test binary and returns its path.
func buildBuzzd(t *testing.T) string {
	t.Helper()
	b := &buzzdBinary
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "buzzd-e2e-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "buzzd")
		cmd := exec.Command("go", "build", "-o", b.path, ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := listenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a process's output safely across goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// buzzdProc is one running buzzd.
type buzzdProc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, valid after done
	port int
	url  string // ws://localhost:port
}

// startBuzzd runs buzzd with exactly the given settings (plus PATH and
// HOME: nothing else of the test's environment leaks in) and waits until it
// accepts connections.
func startBuzzd(t *testing.T, port int, settings map[string]string, args ...string) *buzzdProc {
	t.Helper()
	bin := buildBuzzd(t)
	p := &buzzdProc{out: &lockedBuffer{}, done: make(chan struct{}), port: port,
		url: "ws://localhost:" + strconv.Itoa(port)}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"RELAY_URL=" + p.url, "BUZZ_BIND_ADDR=127.0.0.1:" + strconv.Itoa(port)}
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("buzzd output:\n%s", p.out.String())
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("buzzd exited before listening: %v\n%s", p.err, p.out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("buzzd did not listen within 60s\n%s", p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *buzzdProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("buzzd did not exit within %v\n%s", timeout, p.out.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

func newKey(t *testing.T) (sk, pk string) {
	t.Helper()
	sk = gonostr.GeneratePrivateKey()
	pk, err := gonostr.GetPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return sk, pk
}

func signed(t *testing.T, sk string, kind int, createdAt int64, content string, tags gonostr.Tags) gonostr.Event {
	t.Helper()
	ev := gonostr.Event{Kind: kind, CreatedAt: gonostr.Timestamp(createdAt), Content: content, Tags: tags}
	if tags == nil {
		ev.Tags = gonostr.Tags{}
	}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// client is a minimal Nostr client: gorilla/websocket for transport, and
// go-nostr (independent of this module's nostr package) for every envelope,
// event and filter encoding, for signing and for signature checks.
// (go-nostr's own Relay type is not used: in v0.52.3 its Publish reports
// success when the connection drops before an OK arrives, and its Close races
// with its writer goroutine under -race.)
type client struct {
	ws  *websocket.Conn
	seq int
}

func connect(t *testing.T, url string) *client {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { ws.Close() })
	return &client{ws: ws}
}

func (c *client) send(env gonostr.Envelope) error {
	b, err := env.MarshalJSON()
	if err != nil {
		return err
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

func (c *client) next() (gonostr.Envelope, error) {
	_ = c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, msg, err := c.ws.ReadMessage()
	if err != nil {
		return nil, err
	}
	env := gonostr.ParseMessage(string(msg))
	if env == nil {
		return nil, fmt.Errorf("unparseable message from relay: %.200s", msg)
	}
	return env, nil
}

// publish sends ev and waits for its OK. It returns nil only when the relay
// answered OK true; a connection error or OK false is an error.
func (c *client) publish(ev gonostr.Event) error {
	if err := c.send(&gonostr.EventEnvelope{Event: ev}); err != nil {
		return err
	}
	for {
		env, err := c.next()
		if err != nil {
			return err
		}
		if ok, isOK := env.(*gonostr.OKEnvelope); isOK && ok.EventID == ev.ID {
			if !ok.OK {
				return fmt.Errorf("OK false: %s", ok.Reason)
			}
			return nil
		}
	}
}

// query sends a REQ and returns the stored events up to EOSE, then CLOSEs.
func (c *client) query(filters ...gonostr.Filter) ([]*gonostr.Event, error) {
	c.seq++
	id := "q" + strconv.Itoa(c.seq)
	if err := c.send(&gonostr.ReqEnvelope{SubscriptionID: id, Filters: filters}); err != nil {
		return nil, err
	}
	var out []*gonostr.Event
	for {
		env, err := c.next()
		if err != nil {
			return nil, err
		}
		switch e := env.(type) {
		case *gonostr.EventEnvelope:
			if e.SubscriptionID != nil && *e.SubscriptionID == id {
				ev := e.Event
				out = append(out, &ev)
			}
		case *gonostr.EOSEEnvelope:
			if string(*e) == id {
				ce := gonostr.CloseEnvelope(id)
				return out, c.send(&ce)
			}
		case *gonostr.ClosedEnvelope:
			if e.SubscriptionID == id {
				return nil, fmt.Errorf("CLOSED: %s", e.Reason)
			}
		}
	}
}

// exerciseRelay publishes through one connection and reads back through
// another, checks NIP-11, and checks that an unmapped host is refused.
func exerciseRelay(t *testing.T, p *buzzdProc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	sk, pk := newKey(t)
	now := time.Now().Unix()
	pub := connect(t, p.url)
	var want []string
	for i := range 5 {
		ev := signed(t, sk, 1, now-int64(10*i), fmt.Sprintf("e2e note %d \u2603 \"quoted\"", i), gonostr.Tags{{"t", "buzz"}})
		if err := pub.publish(ev); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		want = append(want, ev.ID) // newest first
	}
	bad := signed(t, sk, 1, now, "tampered", nil)
	bad.Content = "changed after signing"
	if err := pub.publish(bad); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Errorf("tampered event: err = %v, want an invalid: rejection", err)
	}

	// Read back over 127.0.0.1, which folds to the same community as localhost.
	reader := connect(t, "ws://127.0.0.1:"+strconv.Itoa(p.port))
	got, err := reader.query(gonostr.Filter{Authors: []string{pk}, Kinds: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range got {
		ids = append(ids, ev.ID)
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Errorf("event %s comes back with a bad signature", ev.ID)
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("REQ returned %v, want %v (newest first)", ids, want)
	}
	got, err = reader.query(gonostr.Filter{Tags: gonostr.TagMap{"t": {"buzz"}}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != want[0] || got[1].ID != want[1] {
		t.Errorf("#t limit 2 returned %d events", len(got))
	}

	// NIP-11 advertises the configured limits.
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:"+strconv.Itoa(p.port)+"/", nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Name       string `json:"name"`
		Limitation struct {
			MaxMessageLength int `json:"max_message_length"`
		} `json:"limitation"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("NIP-11: %v", err)
	}
	if doc.Limitation.MaxMessageLength != 300000 || doc.Name != "e2e relay" {
		t.Errorf("NIP-11 name %q max_message_length %d, want the configured e2e relay / 300000", doc.Name, doc.Limitation.MaxMessageLength)
	}

	// A host that is not mapped gets 404 and no upgrade.
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	_, resp, err = d.DialContext(ctx, "ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {"unmapped.example"}})
	if err == nil {
		t.Fatal("unmapped host was upgraded")
	}
	if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("unmapped host: %v, want HTTP 404", err)
	}
}

// e2eSettings are the settings every e2e buzzd gets on top of its store.
func e2eSettings(kv ...string) map[string]string {
	m := map[string]string{"BUZZ_MAX_FRAME_BYTES": "300000", "BUZZ_RELAY_NAME": "e2e relay", "BUZZ_LOG_LEVEL": "warn"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestE2EEmbedded runs the relay on the embedded store, which keeps its
// events in the engine's directory beside the SQLite file.
func TestE2EEmbedded(t *testing.T) {
	dir := t.TempDir()
	p := startBuzzd(t, freePort(t), e2eSettings("BUZZ_DATA_DIR", dir))
	exerciseRelay(t, p)
	if _, err := os.Stat(filepath.Join(dir, embedded.DefaultFileName+embedded.EventsDirSuffix)); err != nil {
		t.Fatalf("no events directory: %v", err)
	}
}

// freshDatabase creates an empty database for one test and drops it after.
// Without a reachable PostgreSQL the test skips, or fails when CI=true.
func freshDatabase(t *testing.T) string {
	t.Helper()
	return pgtest.NewEmptyDatabase(t)
}

func TestE2EPostgres(t *testing.T) {
	dbURL := freshDatabase(t)

	// buzzd migrate applies the migrations and exits 0; running it twice is fine.
	bin := buildBuzzd(t)
	for range 2 {
		cmd := exec.Command(bin, "migrate")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dbURL}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("buzzd migrate: %v\n%s", err, out)
		}
	}
	p := startBuzzd(t, freePort(t), e2eSettings("DATABASE_URL", dbURL, "BUZZ_DATA_DIR", t.TempDir()))
	exerciseRelay(t, p)
}

func TestE2EPostgresAutoMigrate(t *testing.T) {
	dbURL := freshDatabase(t)
	p := startBuzzd(t, freePort(t), e2eSettings("DATABASE_URL", dbURL, "BUZZ_AUTO_MIGRATE", "on", "BUZZ_DATA_DIR", t.TempDir()))
	exerciseRelay(t, p)
}

// TestRestartAfterKill publishes concurrently, kills buzzd with SIGKILL in
// the middle of the stream, restarts it on the same data directory, and
// requires every event that was acknowledged with OK true to be there.
func TestRestartAfterKill(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		restartAfterKill(t, map[string]string{"BUZZ_DATA_DIR": t.TempDir(), "BUZZ_LOG_LEVEL": "warn"})
	})
	t.Run("postgres", func(t *testing.T) {
		restartAfterKill(t, map[string]string{"DATABASE_URL": freshDatabase(t), "BUZZ_AUTO_MIGRATE": "true",
			"BUZZ_DATA_DIR": t.TempDir(), "BUZZ_LOG_LEVEL": "warn"})
	})
}

func restartAfterKill(t *testing.T, settings map[string]string) {
	const (
		publishers  = 8
		perConn     = 100
		killAfterOK = 250
	)
	port := freePort(t)
	p := startBuzzd(t, port, settings)

	// Sign everything before the clock starts.
	now := time.Now().Unix()
	batches := make([][]gonostr.Event, publishers)
	var signWG sync.WaitGroup
	for i := range batches {
		sk, _ := newKey(t)
		batches[i] = make([]gonostr.Event, perConn)
		signWG.Add(1)
		go func() { // signing is slow under -race: use every core
			defer signWG.Done()
			for j := range perConn {
				ev := gonostr.Event{Kind: 1, CreatedAt: gonostr.Timestamp(now - int64(j)),
					Content: fmt.Sprintf("restart %d/%d", i, j), Tags: gonostr.Tags{}}
				if err := ev.Sign(sk); err != nil {
					panic(err)
				}
				batches[i][j] = ev
			}
		}()
	}
	signWG.Wait()

	var (
		mu     sync.Mutex
		acked  = map[string]gonostr.Event{}
		killed = make(chan struct{})
		once   sync.Once
		wg     sync.WaitGroup
	)
	kill := func() {
		once.Do(func() {
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Error(err)
			}
			close(killed)
		})
	}
	for i := range publishers {
		r := connect(t, p.url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ev := range batches[i] {
				if err := r.publish(ev); err != nil {
					return // OK false, or the connection died: not acknowledged
				}
				mu.Lock()
				acked[ev.ID] = ev
				n := len(acked)
				mu.Unlock()
				if n >= killAfterOK {
					kill()
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("all %d events were acknowledged before the kill point; raise perConn", len(acked))
	}
	if code := p.wait(t, 10*time.Second); code != -1 {
		t.Logf("killed buzzd exit code %d", code)
	}
	if len(acked) == publishers*perConn {
		t.Fatal("every event was acknowledged: the kill did not land mid-stream")
	}
	t.Logf("%d events acknowledged before SIGKILL", len(acked))

	p2 := startBuzzd(t, port, settings)
	r := connect(t, p2.url)
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	found := map[string]bool{}
	for chunk := range slices.Chunk(ids, 200) {
		got, err := r.query(gonostr.Filter{IDs: chunk})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range got {
			want, ok := acked[ev.ID]
			if !ok {
				continue
			}
			if ev.Content != want.Content || ev.Sig != want.Sig {
				t.Errorf("event %s changed across the restart", ev.ID)
			}
			found[ev.ID] = true
		}
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged events are missing after kill -9 and restart (e.g. %s)", len(missing), len(ids), missing[0])
	}
}

// TestGracefulShutdown sends SIGTERM while a client holds a subscription:
// the client gets close code 1012 and buzzd exits 0.
func TestGracefulShutdown(t *testing.T) {
	debugAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := startBuzzd(t, freePort(t), map[string]string{"BUZZ_DATA_DIR": t.TempDir(), "BUZZ_LOG_LEVEL": "info",
		"BUZZ_DEBUG_ADDR": debugAddr})

	// The profiler answers on its own listener, and not on the relay's.
	for url, want := range map[string]int{
		"http://" + debugAddr + "/debug/pprof/":                      http.StatusOK,
		"http://127.0.0.1:" + strconv.Itoa(p.port) + "/debug/pprof/": http.StatusNotFound,
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", url, resp.StatusCode, want)
		}
	}

	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, _, err := d.Dial(p.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`["REQ","s1",{"kinds":[1]}]`)); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for EOSE: %v", err)
		}
		if bytes.HasPrefix(msg, []byte(`["EOSE"`)) {
			break
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	var closeErr *websocket.CloseError
	for {
		_, _, err := ws.ReadMessage()
		if err == nil {
			continue
		}
		if !errors.As(err, &closeErr) {
			t.Fatalf("connection ended without a close frame: %v", err)
		}
		break
	}
	if closeErr.Code != websocket.CloseServiceRestart {
		t.Errorf("close code %d, want 1012 (service restart)", closeErr.Code)
	}
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(p.out.String(), "shutdown complete") {
		t.Errorf("no 'shutdown complete' in the log:\n%s", p.out.String())
	}
}

// TestE2EAuthRequired checks the BUZZ_AUTH_REQUIRED wiring end to end: REQ
// is refused until NIP-42 AUTH with a relay tag naming RELAY_URL, then served.
func TestE2EAuthRequired(t *testing.T) {
	p := startBuzzd(t, freePort(t), map[string]string{"BUZZ_DATA_DIR": t.TempDir(), "BUZZ_AUTH_REQUIRED": "true", "BUZZ_LOG_LEVEL": "warn"})
	c := connect(t, p.url)

	var challenge string
	for challenge == "" {
		env, err := c.next()
		if err != nil {
			t.Fatalf("waiting for the AUTH challenge: %v", err)
		}
		if a, ok := env.(*gonostr.AuthEnvelope); ok && a.Challenge != nil {
			challenge = *a.Challenge
		}
	}
	if _, err := c.query(gonostr.Filter{Kinds: []int{1}}); err == nil || !strings.Contains(err.Error(), "auth-required:") {
		t.Fatalf("REQ before AUTH: %v, want CLOSED auth-required:", err)
	}

	sk, pk := newKey(t)
	auth := signed(t, sk, 22242, time.Now().Unix(), "", gonostr.Tags{{"relay", p.url}, {"challenge", challenge}})
	if err := c.send(&gonostr.AuthEnvelope{Event: auth}); err != nil {
		t.Fatal(err)
	}
	for {
		env, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		if ok, isOK := env.(*gonostr.OKEnvelope); isOK && ok.EventID == auth.ID {
			if !ok.OK {
				t.Fatalf("AUTH refused: %s", ok.Reason)
			}
			break
		}
	}
	note := signed(t, sk, 1, time.Now().Unix(), "after auth", nil)
	if err := c.publish(note); err != nil {
		t.Fatalf("publish after AUTH: %v", err)
	}
	got, err := c.query(gonostr.Filter{Authors: []string{pk}})
	if err != nil {
		t.Fatalf("REQ after AUTH: %v", err)
	}
	if len(got) != 1 || got[0].ID != note.ID {
		t.Errorf("REQ after AUTH returned %d events", len(got))
	}
}
