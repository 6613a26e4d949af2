package cluster_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/cluster"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// hosts is a fixed host directory.
type hosts map[string]tenant.CommunityID

func (h hosts) LookupHost(_ context.Context, host string) (tenant.CommunityID, error) {
	if c, ok := h[host]; ok {
		return c, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

func randomNamespace(t *testing.T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "cluster-test-" + hex.EncodeToString(b[:])
}

func open(t *testing.T, dir tenant.Directory, opts ...cluster.Option) *cluster.Deployment {
	t.Helper()
	d, err := cluster.Open(context.Background(), dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func TestOpenRefusesBadOptions(t *testing.T) {
	dir := hosts{}
	for name, opt := range map[string]cluster.Option{
		"http URL":           cluster.WithRedis("http://127.0.0.1:6379"),
		"no scheme":          cluster.WithRedis("127.0.0.1:6379"),
		"pod with space":     cluster.WithPod("pod a", ""),
		"empty pod":          cluster.WithPod("", ""),
		"pod too long":       cluster.WithPod(strings.Repeat("p", 129), ""),
		"version control":    cluster.WithPod("pod-a", "v1\n"),
		"namespace colon":    cluster.WithNamespace("a:b"),
		"namespace empty":    cluster.WithNamespace(""),
		"zero timeout":       cluster.WithConnectTimeout(0),
		"negative limit":     cluster.WithEventRateLimit(-1, time.Second),
		"negative window":    cluster.WithEventRateLimit(1, -time.Second),
		"negative cache TTL": cluster.WithHostCache(-time.Second, 0),
		"nil logger":         cluster.WithLogger(nil),
		"nil option":         nil,
	} {
		t.Run(name, func(t *testing.T) {
			d, err := cluster.Open(context.Background(), dir, opt)
			if err == nil {
				_ = d.Close()
				t.Fatal("Open accepted it")
			}
			if !strings.HasPrefix(err.Error(), "cluster: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
	if _, err := cluster.Open(context.Background(), nil); err == nil {
		t.Fatal("Open accepted a nil directory")
	}
}

// TestInProcess: without Redis the deployment is this process; its relay
// options make a working relay whose directory is the fence over the
// host cache.
func TestInProcess(t *testing.T) {
	ctx := context.Background()
	st, err := embedded.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c, _, err := st.EnsureCommunity(ctx, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	d := open(t, st, cluster.WithEventRateLimit(5, 0), cluster.WithPod("pod-a", "v1"))
	if d.Distributed() {
		t.Fatal("Distributed without Redis")
	}
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("Ping in-process: %v", err)
	}
	if d.Pod() != "pod-a" {
		t.Fatalf("Pod = %q", d.Pod())
	}
	got, err := d.Directory().LookupHost(ctx, "a.example")
	if err != nil || got != c {
		t.Fatalf("LookupHost = %v, %v; want %v", got, err, c)
	}
	// An archive announced on the control bus fences the community at
	// once, whatever the cache still holds.
	d.Directory().OnControl(c, control.DisconnectCommunity{})
	if _, err := d.Directory().LookupHost(ctx, "a.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("LookupHost of a fenced community = %v, want ErrUnknownHost", err)
	}
	rel, err := buzz.New(append(d.RelayOptions(), buzz.WithStore(st))...)
	if err != nil {
		t.Fatalf("buzz.New with the deployment's options: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rel.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
}

// nip98Header signs a NIP-98 token for GET url.
func nip98Header(t *testing.T, url string) string {
	t.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	ev := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: nostr.KindHTTPAuth, Tags: nostr.Tags{{"u", url}, {"method", "GET"}}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

// TestPodsShareRedis: two deployments on one Redis namespace are pods of
// one deployment: a NIP-98 token spent on one is refused on the other, and
// both answer Ping. A third in another namespace is another deployment.
func TestPodsShareRedis(t *testing.T) {
	addr := testenv.NeedRedis(t)
	ctx := context.Background()
	ns := randomNamespace(t)
	url := "redis://" + addr
	a := open(t, hosts{}, cluster.WithRedis(url), cluster.WithNamespace(ns), cluster.WithPod("pod-a", "v1"))
	b := open(t, hosts{}, cluster.WithRedis(url), cluster.WithNamespace(ns), cluster.WithPod("pod-b", "v1"))
	other := open(t, hosts{}, cluster.WithRedis(url), cluster.WithNamespace(randomNamespace(t)))
	for _, d := range []*cluster.Deployment{a, b, other} {
		if !d.Distributed() {
			t.Fatal("not Distributed with Redis")
		}
		if err := d.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}
	const u = "https://a.example/query"
	scope := nip98.CommunityScope(tenant.NewCommunityID())
	verify := func(d *cluster.Deployment, auth string) error {
		v, err := d.NIP98Verifier()
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(ctx, nip98.Request{Authorization: auth, Method: "GET", URL: u, Scope: scope})
		return err
	}
	auth := nip98Header(t, u)
	if err := verify(a, auth); err != nil {
		t.Fatalf("first use on pod a: %v", err)
	}
	if err := verify(b, auth); !errors.Is(err, nip98.ErrReplayed) {
		t.Fatalf("replay on pod b = %v, want ErrReplayed", err)
	}
	if err := verify(other, auth); err != nil {
		t.Fatalf("another deployment's first use: %v", err)
	}
}

// TestRedisUnreachable: a Redis that does not answer fails Open within
// the connect timeout, with the URL's password hidden.
func TestRedisUnreachable(t *testing.T) {
	_, err := cluster.Open(context.Background(), hosts{},
		cluster.WithRedis("redis://:hunter2@127.0.0.1:1"), cluster.WithConnectTimeout(500*time.Millisecond))
	if err == nil {
		t.Fatal("Open succeeded without Redis")
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.HasPrefix(err.Error(), "cluster: connect to Redis") {
		t.Fatalf("error = %q", err)
	}
}
