package messaging_test

import (
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
)

func newVerifier(t testing.TB) *nostr.Verifier {
	t.Helper()
	v, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

// TestOwnerAttestationVector: the NIP-OA specification's test vector
// verifies, and its time bound is strict.
func TestOwnerAttestationVector(t *testing.T) {
	const (
		owner = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
		agent = "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"
		cond  = "kind=1&created_at<1713957000"
		sig   = "8b7df2575caf0a108374f8471722b233c53f9ff827a8b0f91861966c3b9dd5cb2e189eae9f49d72187674c2f5bd244145e10ff86c9f257ffe65a1ee5f108b369"
	)
	v := newVerifier(t)
	a, err := messaging.ParseOwnerAttestation(nostr.Tag{"auth", owner, cond, sig})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Verify(v, agent, 1713956999); err != nil {
		t.Fatalf("spec vector: %v", err)
	}
	if err := a.Verify(v, agent, 1713957000); !errors.Is(err, messaging.ErrAttestationExpired) {
		t.Fatalf("on the bound: %v, want expired", err)
	}
	if err := a.Verify(v, owner, 1); !errors.Is(err, messaging.ErrAttestationSelf) {
		t.Fatalf("owner as agent: %v", err)
	}
	other := "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
	if err := a.Verify(v, other, 1); !errors.Is(err, messaging.ErrAttestationSig) {
		t.Fatalf("another agent: %v, want a bad signature", err)
	}
}

// TestOwnerAttestationRoundTrip: AttestAgent makes a tag that parses and
// verifies for its agent only; malformed tags are refused.
func TestOwnerAttestationRoundTrip(t *testing.T) {
	v := newVerifier(t)
	owner, _ := nostr.GenerateSecretKey()
	agent, _ := nostr.GenerateSecretKey()
	tag, err := messaging.AttestAgent(owner, agent.PublicKey(), "created_at>100")
	if err != nil {
		t.Fatal(err)
	}
	a, err := messaging.ParseOwnerAttestation(tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Verify(v, agent.PublicKey(), 101); err != nil {
		t.Fatal(err)
	}
	if err := a.Verify(v, agent.PublicKey(), 100); !errors.Is(err, messaging.ErrAttestationExpired) {
		t.Fatalf("at the lower bound: %v", err)
	}
	if _, err := messaging.AttestAgent(owner, owner.PublicKey(), ""); !errors.Is(err, messaging.ErrAttestationSelf) {
		t.Fatalf("self attestation: %v", err)
	}
	for _, bad := range []nostr.Tag{
		{"auth", owner.PublicKey(), ""},
		{"auth", "ABC", "", tag[3]},
		{"auth", owner.PublicKey(), "kind=01", tag[3]},
		{"auth", owner.PublicKey(), "kind=70000", tag[3]},
		{"auth", owner.PublicKey(), "kind=1&", tag[3]},
		{"auth", owner.PublicKey(), "color=red", tag[3]},
		{"auth", owner.PublicKey(), "", tag[3][:127]},
	} {
		if _, err := messaging.ParseOwnerAttestation(bad); !errors.Is(err, messaging.ErrAttestationMalformed) {
			t.Errorf("%q: %v, want malformed", bad, err)
		}
	}
}

// FuzzParseOwnerAttestation: parsing never panics, and what parses
// verifies or fails with one of the named errors.
func FuzzParseOwnerAttestation(f *testing.F) {
	f.Add("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", "kind=1&created_at<1713957000",
		"8b7df2575caf0a108374f8471722b233c53f9ff827a8b0f91861966c3b9dd5cb2e189eae9f49d72187674c2f5bd244145e10ff86c9f257ffe65a1ee5f108b369", int64(5))
	f.Add("", "", "", int64(0))
	f.Add("00", "created_at>0&kind=65535", "zz", int64(-1))
	v := newVerifier(f)
	const agent = "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"
	f.Fuzz(func(t *testing.T, owner, cond, sig string, at int64) {
		a, err := messaging.ParseOwnerAttestation(nostr.Tag{"auth", owner, cond, sig})
		if err != nil {
			if !errors.Is(err, messaging.ErrAttestationMalformed) {
				t.Fatalf("parse error %v is not ErrAttestationMalformed", err)
			}
			return
		}
		err = a.Verify(v, agent, at)
		if err != nil && !errors.Is(err, messaging.ErrAttestationSelf) && !errors.Is(err, messaging.ErrAttestationSig) && !errors.Is(err, messaging.ErrAttestationExpired) {
			t.Fatalf("verify error %v", err)
		}
	})
}
