package workflow

import (
	"context"
	"errors"

	"github.com/buzzrelay/buzz/safehttp"
)

// SafeHTTPWebhooks returns the WebhookCaller that makes call_webhook's
// requests with c, the SSRF-hardened client: each request carries its
// IdempotencyKey as the Idempotency-Key header, and the response's status
// and body are returned. Pass it to WithWebhookCaller.
func SafeHTTPWebhooks(c *safehttp.Client) WebhookCaller {
	return safeHTTPCaller{c}
}

type safeHTTPCaller struct{ c *safehttp.Client }

func (s safeHTTPCaller) Call(ctx context.Context, r WebhookRequest) (WebhookResponse, error) {
	if s.c == nil {
		return WebhookResponse{}, errors.New("workflow: nil safehttp client")
	}
	h := make(map[string]string, len(r.Headers)+1)
	for k, v := range r.Headers {
		h[k] = v
	}
	if r.IdempotencyKey != "" {
		h["Idempotency-Key"] = r.IdempotencyKey
	}
	resp, err := s.c.Do(ctx, safehttp.Request{Method: r.Method, URL: r.URL, Headers: h, Body: r.Body})
	if err != nil {
		return WebhookResponse{}, err
	}
	return WebhookResponse{Status: resp.Status, Body: resp.Body}, nil
}
