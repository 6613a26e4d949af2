package nip11_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/nip11"
)

// TestDocumentJSON pins the wire format: field names, their order, which
// fields are omitted when empty and which are always sent.
func TestDocumentJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  nip11.Document
		want string
	}{
		{
			name: "empty",
			doc:  nip11.Document{},
			want: `{"supported_nips":null,"limitation":{"max_message_length":0,"max_subscriptions":0,"max_filters":0,"max_limit":0,"default_limit":0,"max_subid_length":0,"max_content_length":0,"created_at_upper_limit":0,"auth_required":false,"restricted_writes":false,"max_filter_values":0,"max_subscription_bytes":0,"max_connection_filter_bytes":0,"max_message_rate":0,"max_query_seconds":0}}`,
		},
		{
			name: "full",
			doc: nip11.Document{
				Name: "buzz", Description: "a relay", PubKey: "pk", Self: "self", Contact: "mailto:ops@example.com",
				Software: "https://github.com/buzzrelay/buzz", Version: "v1", Icon: "https://example.com/i.png",
				SupportedNIPs:       []int{1, 11},
				SupportedExtensions: []string{"nip-er"},
				Limitation: nip11.Limitation{
					MaxMessageLength: 1, MaxSubscriptions: 2, MaxFilters: 3, MaxLimit: 4, DefaultLimit: 5,
					MaxSubIDLength: 6, MaxContentLength: 7, CreatedAtUpperLimit: 8, AuthRequired: true, RestrictedWrites: true,
					MaxFilterValues: 9, MaxSubscriptionBytes: 10, MaxConnectionFilterBytes: 11, MaxMessageRate: 12, MaxQuerySeconds: 13,
					DueDeliveryMode: "push", MaxNotBeforeDelta: 14,
				},
			},
			want: `{"name":"buzz","description":"a relay","pubkey":"pk","self":"self","contact":"mailto:ops@example.com","software":"https://github.com/buzzrelay/buzz","version":"v1","icon":"https://example.com/i.png","supported_nips":[1,11],"supported_extensions":["nip-er"],"limitation":{"max_message_length":1,"max_subscriptions":2,"max_filters":3,"max_limit":4,"default_limit":5,"max_subid_length":6,"max_content_length":7,"created_at_upper_limit":8,"auth_required":true,"restricted_writes":true,"max_filter_values":9,"max_subscription_bytes":10,"max_connection_filter_bytes":11,"max_message_rate":12,"max_query_seconds":13,"due_delivery_mode":"push","max_not_before_delta":14}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("JSON\n got %s\nwant %s", b, tc.want)
			}
			var back nip11.Document
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.doc) {
				t.Fatalf("round trip: got %+v, want %+v", back, tc.doc)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	n := func(num int, title string) nip11.NIP { return nip11.NIP{Number: num, Title: title} }
	for _, tc := range []struct {
		name  string
		lists [][]nip11.NIP
		want  []nip11.NIP
	}{
		{name: "nothing", lists: nil, want: nil},
		{name: "empty lists", lists: [][]nip11.NIP{{}, nil}, want: nil},
		{name: "sorted", lists: [][]nip11.NIP{{n(50, "c"), n(1, "a")}, {n(11, "b")}}, want: []nip11.NIP{n(1, "a"), n(11, "b"), n(50, "c")}},
		{name: "first list wins", lists: [][]nip11.NIP{{n(11, "relay")}, {n(11, "feature"), n(5, "names")}}, want: []nip11.NIP{n(5, "names"), n(11, "relay")}},
		{name: "first in a list wins", lists: [][]nip11.NIP{{n(9, "one"), n(9, "two")}}, want: []nip11.NIP{n(9, "one")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before [][]nip11.NIP
			for _, l := range tc.lists {
				before = append(before, append([]nip11.NIP(nil), l...))
			}
			got := nip11.Merge(tc.lists...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Merge = %v, want %v", got, tc.want)
			}
			for i, l := range tc.lists {
				if !slices.Equal(l, before[i]) {
					t.Fatalf("Merge modified list %d: %v, was %v", i, l, before[i])
				}
			}
		})
	}
}

func TestNumbers(t *testing.T) {
	if got := nip11.Numbers(nil); got == nil || len(got) != 0 {
		t.Fatalf("Numbers(nil) = %#v, want an empty list (supported_nips is [], not null)", got)
	}
	got := nip11.Numbers([]nip11.NIP{{Number: 1}, {Number: 29, Title: "groups"}})
	if !reflect.DeepEqual(got, []int{1, 29}) {
		t.Fatalf("Numbers = %v", got)
	}
}

func TestRequested(t *testing.T) {
	for _, tc := range []struct {
		name   string
		accept []string
		want   bool
	}{
		{"no Accept", nil, false},
		{"html", []string{"text/html"}, false},
		{"json", []string{"application/json"}, false},
		{"nostr+json", []string{"application/nostr+json"}, true},
		{"among others", []string{"text/html, application/nostr+json;q=0.9"}, true},
		{"second header", []string{"text/html", "application/nostr+json"}, true},
		{"any case", []string{"Application/Nostr+JSON"}, true},
		{"a prefix only", []string{"application/nostr"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.accept {
				h.Add("Accept", v)
			}
			if got := nip11.Requested(h); got != tc.want {
				t.Fatalf("Requested(Accept %q) = %v, want %v", tc.accept, got, tc.want)
			}
		})
	}
}

// FuzzMerge checks Merge's promises on any two lists: strictly ascending
// numbers, every input number present, and each number's title the first
// one given for it.
func FuzzMerge(f *testing.F) {
	f.Add([]byte{1, 9, 11}, []byte{5, 11, 1})
	f.Add([]byte{}, []byte{7, 7})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		list := func(bs []byte, title string) []nip11.NIP {
			var l []nip11.NIP
			for i, v := range bs {
				l = append(l, nip11.NIP{Number: int(v), Title: title + string(rune('a'+i%26))})
			}
			return l
		}
		la, lb := list(a, "a"), list(b, "b")
		got := nip11.Merge(la, lb)
		for i := 1; i < len(got); i++ {
			if got[i-1].Number >= got[i].Number {
				t.Fatalf("not strictly ascending: %v", got)
			}
		}
		first := map[int]string{}
		for _, n := range append(append([]nip11.NIP(nil), la...), lb...) {
			if _, ok := first[n.Number]; !ok {
				first[n.Number] = n.Title
			}
		}
		if len(got) != len(first) {
			t.Fatalf("Merge kept %d numbers, the input has %d: %v", len(got), len(first), got)
		}
		for _, n := range got {
			if first[n.Number] != n.Title {
				t.Fatalf("NIP-%d has title %q, the first given was %q", n.Number, n.Title, first[n.Number])
			}
		}
	})
}
