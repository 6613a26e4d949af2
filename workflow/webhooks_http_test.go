package workflow_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/buzzrelay/buzz/safehttp"
	"github.com/buzzrelay/buzz/workflow"
)

// TestSafeHTTPWebhooks checks the adapter from call_webhook's requests to
// safehttp: method, body and headers reach the receiver with the
// Idempotency-Key header, and its status and body come back; a loopback
// receiver is reached only because the test exempts 127.0.0.0/8.
func TestSafeHTTPWebhooks(t *testing.T) {
	var method, body, key, custom string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		method, body, key, custom = r.Method, string(b), r.Header.Get("Idempotency-Key"), r.Header.Get("X-Custom")
		w.WriteHeader(202)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)

	refusing, err := safehttp.New()
	if err != nil {
		t.Fatal(err)
	}
	req := workflow.WebhookRequest{
		URL: srv.URL + "/hook", Method: "POST", Body: []byte(`{"a":1}`),
		Headers: map[string]string{"X-Custom": "v"}, IdempotencyKey: "run:step",
	}
	if _, err := workflow.SafeHTTPWebhooks(refusing).Call(context.Background(), req); err == nil {
		t.Fatal("a loopback receiver was reached without an exemption")
	}

	c, err := safehttp.New(safehttp.WithAllowedPrefixes(netip.MustParsePrefix("127.0.0.0/8")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := workflow.SafeHTTPWebhooks(c).Call(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 202 || string(resp.Body) != `{"ok":true}` {
		t.Fatalf("response %d %q", resp.Status, resp.Body)
	}
	if method != "POST" || body != `{"a":1}` || key != "run:step" || custom != "v" {
		t.Fatalf("receiver saw method %q body %q Idempotency-Key %q X-Custom %q", method, body, key, custom)
	}
	if req.Headers["Idempotency-Key"] != "" {
		t.Fatal("the caller's header map was modified")
	}
}
