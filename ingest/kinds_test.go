package ingest

import (
	"errors"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
)

func TestValidateDeletion(t *testing.T) {
	author := strings.Repeat("a", 64)
	other := strings.Repeat("b", 64)
	id := strings.Repeat("c", 64)
	cases := []struct {
		name string
		tags nostr.Tags
		ok   bool
	}{
		{"e", nostr.Tags{{"e", id}}, true},
		{"a", nostr.Tags{{"a", "30000:" + author + ":x"}}, true},
		{"a empty d", nostr.Tags{{"a", "10000:" + author + ":"}}, true},
		{"a d with colon", nostr.Tags{{"a", "30000:" + author + ":x:y"}}, true},
		{"e and a", nostr.Tags{{"e", id}, {"a", "30000:" + author + ":x"}}, true},
		{"none", nostr.Tags{{"p", author}}, false},
		{"empty", nostr.Tags{}, false},
		{"e short", nostr.Tags{{"e", "abc"}}, false},
		{"e upper", nostr.Tags{{"e", strings.ToUpper(id)}}, false},
		{"a foreign", nostr.Tags{{"a", "30000:" + other + ":x"}}, false},
		{"a no d part", nostr.Tags{{"a", "30000:" + author}}, false},
		{"a bad kind", nostr.Tags{{"a", "-1:" + author + ":x"}}, false},
		{"a big kind", nostr.Tags{{"a", "70000:" + author + ":x"}}, false},
		{"a plus kind", nostr.Tags{{"a", "+1:" + author + ":x"}}, false},
		{"a leading zero kind", nostr.Tags{{"a", "01:" + author + ":x"}}, false},
		{"a upper-case pubkey", nostr.Tags{{"a", "30000:" + strings.ToUpper(author) + ":x"}}, false},
		{"good then bad", nostr.Tags{{"e", id}, {"e", "x"}}, false},
	}
	for _, c := range cases {
		err := validateKind(&nostr.Event{Kind: nostr.KindDeletion, PubKey: author, Tags: c.tags})
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Errorf("%s: unprefixed %q", c.name, err)
		}
	}
	if err := validateKind(&nostr.Event{Kind: 1}); err != nil {
		t.Errorf("kind 1: %v", err)
	}
}

func TestReason(t *testing.T) {
	for in, want := range map[string]string{
		"no spam":               "blocked: no spam",
		"rate-limited: slow":    "rate-limited: slow",
		"restricted: members":   "restricted: members",
		"invalid:no space":      "invalid:no space",
		"pow: difficulty 20":    "pow: difficulty 20",
		"errorish text":         "blocked: errorish text",
		"auth-required: please": "auth-required: please",
	} {
		if got := Reason(errors.New(in), "blocked: "); got != want {
			t.Errorf("Reason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
}

// Kinds 30617 and 30621 are global-only: an h tag is refused, after the
// kind's own rules (a malformed project still gets its rule's message).
func TestGlobalOnlyKinds(t *testing.T) {
	h := nostr.Tag{"h", "pizza"}
	for _, kind := range []int{nostr.KindRepository, nostr.KindProject} {
		ok := &nostr.Event{Kind: kind, Tags: nostr.Tags{{"d", "repo"}}}
		if err := validateKind(ok); err != nil {
			t.Fatalf("kind %d without h: %v", kind, err)
		}
		withH := &nostr.Event{Kind: kind, Tags: nostr.Tags{{"d", "repo"}, h}}
		err := validateKind(withH)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid: ") || !strings.Contains(err.Error(), "takes no h tag") {
			t.Fatalf("kind %d with h: err = %v, want the global-only refusal", kind, err)
		}
	}
	bad := &nostr.Event{Kind: nostr.KindProject, Tags: nostr.Tags{{"d", "a"}, {"d", "b"}, h}}
	if err := validateKind(bad); err == nil || strings.Contains(err.Error(), "h tag") {
		t.Fatalf("malformed project with h: err = %v, want its own rule's refusal first", err)
	}
}
