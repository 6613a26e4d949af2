package messaging

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// An owner attestation (NIP-OA) is how an agent (a bot key) proves who owns
// it: the owner signs, with its own key, the agent's pubkey and optional
// conditions. The agent carries it as a tag of its NIP-42 AUTH event:
//
//	["auth", <owner pubkey>, <conditions>, <signature>]
//
// The signature is BIP-340 over sha256("nostr:agent-auth:" + agent pubkey +
// ":" + conditions). Conditions are "" or clauses joined by "&":
// "kind=N", "created_at<T", "created_at>T" (canonical decimals); the
// created_at clauses bound the AUTH event's created_at, strictly.

// TagOwnerAttestation is the name of the tag carrying an attestation.
const TagOwnerAttestation = "auth"

// OwnerAttestation is a parsed, not yet verified, attestation.
type OwnerAttestation struct {
	Owner      string // pubkey, lowercase hex
	Conditions string
	Sig        string // 128 lowercase hex characters
}

// Errors of ParseOwnerAttestation and Verify.
var (
	ErrAttestationMalformed = errors.New("owner attestation is malformed")
	ErrAttestationSelf      = errors.New("owner attestation names the agent as its own owner")
	ErrAttestationSig       = errors.New("owner attestation signature does not verify")
	ErrAttestationExpired   = errors.New("owner attestation is outside its time bounds")
)

// OwnerAttestationOf returns the attestation ev carries (its first auth
// tag); false when it has none.
func OwnerAttestationOf(ev *nostr.Event) (nostr.Tag, bool) {
	t := ev.Tags.Find(TagOwnerAttestation)
	return t, t != nil
}

// ParseOwnerAttestation reads an auth tag: exactly four elements, an owner
// pubkey and a signature in lowercase hex, valid conditions.
func ParseOwnerAttestation(t nostr.Tag) (OwnerAttestation, error) {
	if len(t) != 4 || t[0] != TagOwnerAttestation {
		return OwnerAttestation{}, fmt.Errorf("%w: want [\"auth\", owner, conditions, signature]", ErrAttestationMalformed)
	}
	a := OwnerAttestation{Owner: t[1], Conditions: t[2], Sig: t[3]}
	if !nostr.IsLowerHex(a.Owner, 64) {
		return OwnerAttestation{}, fmt.Errorf("%w: owner is not a pubkey", ErrAttestationMalformed)
	}
	if !nostr.IsLowerHex(a.Sig, 128) {
		return OwnerAttestation{}, fmt.Errorf("%w: signature is not 128 hex characters", ErrAttestationMalformed)
	}
	if err := checkConditions(a.Conditions); err != nil {
		return OwnerAttestation{}, err
	}
	return a, nil
}

// AgentAuthDigest is what an owner signs to attest agent under conditions.
func AgentAuthDigest(agent, conditions string) [32]byte {
	return sha256.Sum256([]byte("nostr:agent-auth:" + agent + ":" + conditions))
}

// Verify checks a against agent: the owner is not the agent, the signature
// verifies, and createdAt (the AUTH event's) is within the created_at
// bounds. kind= clauses restrict what the agent publishes, not who owns
// it: they are not checked here.
func (a OwnerAttestation) Verify(v *nostr.Verifier, agent string, createdAt int64) error {
	if a.Owner == agent {
		return ErrAttestationSelf
	}
	if err := v.VerifyDigest(a.Owner, AgentAuthDigest(agent, a.Conditions), a.Sig); err != nil {
		return ErrAttestationSig
	}
	for _, c := range splitConditions(a.Conditions) {
		if b, ok := strings.CutPrefix(c, "created_at<"); ok {
			if n, _ := strconv.ParseInt(b, 10, 64); createdAt >= n {
				return ErrAttestationExpired
			}
		} else if b, ok := strings.CutPrefix(c, "created_at>"); ok {
			if n, _ := strconv.ParseInt(b, 10, 64); createdAt <= n {
				return ErrAttestationExpired
			}
		}
	}
	return nil
}

// AttestAgent returns the auth tag by which owner attests agent under
// conditions (for clients and tests).
func AttestAgent(owner nostr.SecretKey, agent, conditions string) (nostr.Tag, error) {
	if err := checkConditions(conditions); err != nil {
		return nil, err
	}
	if owner.PublicKey() == agent {
		return nil, ErrAttestationSelf
	}
	sig, err := owner.SignDigest(AgentAuthDigest(agent, conditions))
	if err != nil {
		return nil, err
	}
	return nostr.Tag{TagOwnerAttestation, owner.PublicKey(), conditions, sig}, nil
}

func splitConditions(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "&")
}

// checkConditions validates a conditions string: clauses kind=0–65535,
// created_at<N and created_at>N (0–4294967295), canonical decimals, no
// empty clause.
func checkConditions(s string) error {
	for _, c := range splitConditions(s) {
		var v string
		var hi uint64
		switch {
		case strings.HasPrefix(c, "kind="):
			v, hi = c[len("kind="):], 65535
		case strings.HasPrefix(c, "created_at<"):
			v, hi = c[len("created_at<"):], 4294967295
		case strings.HasPrefix(c, "created_at>"):
			v, hi = c[len("created_at>"):], 4294967295
		default:
			return fmt.Errorf("%w: unsupported condition %q", ErrAttestationMalformed, c)
		}
		if v == "" || len(v) > 1 && v[0] == '0' || strings.TrimLeft(v, "0123456789") != "" {
			return fmt.Errorf("%w: condition %q is not a canonical number", ErrAttestationMalformed, c)
		}
		if n, err := strconv.ParseUint(v, 10, 64); err != nil || n > hi {
			return fmt.Errorf("%w: condition %q out of range", ErrAttestationMalformed, c)
		}
	}
	return nil
}
