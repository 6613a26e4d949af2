package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
)

// TestHTTPAPIFilterLimits: POST /query and /count hold their filters to
// exactly the limits a REQ is held to (values per field, filters per
// request, bytes), refusing with 400 and the message the WebSocket's CLOSED
// carries; a filter at the limit is accepted by both.
func TestHTTPAPIFilterLimits(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		p := serve(t, st)
		host := p.Host
		lim := buzz.DefaultLimits() // the relay's, as no WithLimits is given
		attacker := newSigner(t)
		c := p.dial(t)

		hexes := func(n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("%064x", i+1)
			}
			return out
		}
		words := func(n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("t%d", i)
			}
			return out
		}
		many := func(n int) []nostr.Filter {
			out := make([]nostr.Filter, n)
			for i := range out {
				out[i] = nostr.Filter{Kinds: []int{1}}
			}
			return out
		}
		// A filter of just under MaxSubscriptionBytes alone, so that two of
		// them are too large, with few enough values per field.
		big := nostr.Filter{Tags: map[string][]string{"t": {strings.Repeat("a", lim.MaxSubscriptionBytes/2)}}}

		refused := []struct {
			name    string
			filters []nostr.Filter
			want    string
		}{
			{"15,000 authors", []nostr.Filter{{Authors: hexes(15000)}}, fmt.Sprintf("invalid: too many values in authors (limit %d)", lim.MaxFilterValues)},
			{"60,000 #t values", []nostr.Filter{{Tags: map[string][]string{"t": words(60000)}}}, fmt.Sprintf("invalid: too many values in #t (limit %d)", lim.MaxFilterValues)},
			{"one author over", []nostr.Filter{{Authors: hexes(lim.MaxFilterValues + 1)}}, fmt.Sprintf("invalid: too many values in authors (limit %d)", lim.MaxFilterValues)},
			{"one kind over", []nostr.Filter{{Kinds: make([]int, lim.MaxFilterValues+1)}}, fmt.Sprintf("invalid: too many values in kinds (limit %d)", lim.MaxFilterValues)},
			{"one filter over", many(lim.MaxFilters + 1), fmt.Sprintf("invalid: too many filters (limit %d)", lim.MaxFilters)},
			{"too many bytes", []nostr.Filter{big, big, big}, fmt.Sprintf("invalid: filters too large (limit %d bytes)", lim.MaxSubscriptionBytes)},
		}
		for i, tc := range refused {
			// The WebSocket's answer is the reference, where the REQ fits
			// in one frame (the cases of 15,000 and 60,000 values do not:
			// "one … over" gives the REQ's message for them).
			sub := fmt.Sprintf("s%d", i)
			if frame := nostr.AppendReq(nil, sub, tc.filters...); len(frame) < lim.MaxFrameBytes {
				eq(t, tc.name+": REQ", c.closed(frame, sub), tc.want)
			}
			for _, path := range []string{queryPath, countPath} {
				code, body := p.callJSON(t, attacker, host, path, tc.filters)
				eq(t, tc.name+" "+path+": status", code, http.StatusBadRequest)
				var res struct{ Error, Message string }
				if err := json.Unmarshal(body, &res); err != nil {
					t.Fatalf("%s %s: body %s", tc.name, path, body)
				}
				eq(t, tc.name+" "+path+": message", res.Message, tc.want)
				if len(tc.filters) == 1 { // a bare filter object, not an array
					code, body = p.callJSON(t, attacker, host, path, tc.filters[0])
					eq(t, tc.name+" "+path+" (object): status", code, http.StatusBadRequest)
					_ = json.Unmarshal(body, &res)
					eq(t, tc.name+" "+path+" (object): message", res.Message, tc.want)
				}
			}
		}

		// At the limit: accepted on every route.
		atLimit := []nostr.Filter{{Authors: hexes(lim.MaxFilterValues), Tags: map[string][]string{"t": words(lim.MaxFilterValues)}}}
		atLimit = append(atLimit, many(lim.MaxFilters-1)...)
		eq(t, "at the limit: REQ", len(c.req("ok", atLimit...)), 0)
		eq(t, "at the limit: /query", len(p.query(t, attacker, host, queryPath, atLimit...)), 0)
		eq(t, "at the limit: /count", p.count(t, attacker, host, atLimit...), int64(0))
	})
}
