package workflowhost

// Test helpers of this package; the relay and what a test observes come
// from internal/relaytest, raw clients and signers from internal/rawclient.

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// testRelay is a relay served over HTTP, its host mapped to a community.
type testRelay struct {
	*relaytest.Relay
	tc tenant.TenantContext
	wf *Feature // the workflow host, when mounted (workflowRelay)
}

// rawClient is a raw WebSocket client with this package's shorthands.
type rawClient struct{ *rawclient.Client }

type signer = rawclient.Signer

func newSigner(t testing.TB) *signer { return rawclient.NewSigner(t) }

// backendRelay serves a relay on st with WithStore, WithDirectory,
// WithChannels, a quiet logger, then opts.
func backendRelay(t testing.TB, st store.Backend, opts ...buzz.Option) *testRelay {
	t.Helper()
	r := relaytest.ServeWith(t, st, append([]buzz.Option{buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(),
		buzz.WithLogger(relaytest.Quiet())}, opts...)...)
	tc, err := tenant.Bind(context.Background(), st, r.Host)
	if err != nil {
		t.Fatal(err)
	}
	return &testRelay{Relay: r, tc: tc}
}

// forBackends runs fn on the embedded store and on PostgreSQL.
func forBackends(t *testing.T, fn func(t *testing.T, st store.Backend)) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) { fn(t, st) })
}

func (tr *testRelay) dial(t testing.TB) *rawClient { t.Helper(); return &rawClient{tr.Dial(t)} }

func (tr *testRelay) dialWith(t testing.TB, d *websocket.Dialer) *rawClient {
	t.Helper()
	return &rawClient{tr.DialWith(t, d)}
}

// dialHost connects with the Host header host (another community of the
// same relay).
func (tr *testRelay) dialHost(t testing.TB, host string) *rawClient {
	t.Helper()
	return &rawClient{tr.DialHost(t, host)}
}

func chanTag(id channel.ID) nostr.Tag { return nostr.Tag{"h", id.String()} }

// createChannel publishes a 9007 through c and returns the new id.
func (c *rawClient) createChannel(s *signer, name string, vis channel.Visibility) channel.ID {
	c.T.Helper()
	id := storetest.NewChannelID()
	c.MustAccept(s.Event(nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", name}, nostr.Tag{"visibility", string(vis)}))
	return id
}

func (c *rawClient) command(s *signer, kind int, id channel.ID, tags ...nostr.Tag) *nostr.OKMessage {
	c.T.Helper()
	return c.Publish(s.Event(kind, now(), "", append([]nostr.Tag{chanTag(id)}, tags...)...))
}

var testMaster = func() nostr.SecretKey {
	sk, err := nostr.ParseSecretKey(strings.Repeat("3c", 32))
	if err != nil {
		panic(err)
	}
	return sk
}()

func now() int64 { return time.Now().Unix() }

func ptr[T any](v T) *T { return &v }

func expTag(t time.Time) nostr.Tag { return nostr.Tag{"expiration", strconv.FormatInt(t.Unix(), 10)} }

// quietHost is a buzz.Host with a quiet logger only, for unit tests of
// what needs no relay.
type quietHost struct{ buzz.Host }

func (quietHost) Logger() *slog.Logger { return relaytest.Quiet() }
