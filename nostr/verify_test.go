package nostr

import (
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	gonostr "github.com/nbd-wtf/go-nostr"
)

// bip340Vectors are rows of the BIP-340 test-vectors.csv (index, secret
// key, public key, aux rand, message, signature, result).
var bip340Vectors = []struct {
	index            int
	secret, pub, aux string
	msg, sig         string
	valid            bool
}{
	{0, "0000000000000000000000000000000000000000000000000000000000000003", "F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9",
		"0000000000000000000000000000000000000000000000000000000000000000", "0000000000000000000000000000000000000000000000000000000000000000",
		"E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA821525F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0", true},
	{1, "B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659",
		"0000000000000000000000000000000000000000000000000000000000000001", "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"6896BD60EEAE296DB48A229FF71DFE071BDE413E6D43F917DC8DCF8C78DE33418906D11AC976ABCCB20B091292BFF4EA897EFCB639EA871CFA95F6DE339E4B0A", true},
	{2, "C90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B14E5C9", "DD308AFEC5777E13121FA72B9CC1B7CC0139715309B086C960E18FD969774EB8",
		"C87AA53824B4D7AE2EB035A2B5BBBCCC080E76CDC6D1692C4B0B62D798E6D906", "7E2D58D8B3BCDF1ABADEC7829054F90DDA9805AAB56C77333024B9D0A508B75C",
		"5831AAEED7B44BB74E5EAB94BA9D4294C49BCF2A60728D8B4C200F50DD313C1BAB745879A5AD954A72C45A91C3A51D3C7ADEA98D82F8481E0E1E03674A6F3FB7", true},
	{3, "0B432B2677937381AEF05BB02A66ECD012773062CF3FA2549E44F58ED2401710", "25D1DFF95105F5253C4022F628A996AD3A0D95FBF21D468A1B33F8C160D8F517",
		"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
		"7EB0509757E246F19449885651611CB965ECC1A187DD51B64FDA1EDC9637D5EC97582B9CB13DB3933705B32BA982AF5AF25FD78881EBB32771FC5922EFC66EA3", true},
	{4, "", "D69C3509BB99E412E68B0FE8544E72837DFA30746D8BE2AA65975F29D22DC7B9", "",
		"4DF3C3F68FCC83B27E9D42C90431A72499F17875C81A599B566C9889B9696703",
		"00000000000000000000003B78CE563F89A0ED9414F5AA28AD0D96D6795F9C6376AFB1548AF603B3EB45C9F8207DEE1060CB71C04E80F593060B07D28308D7F4", true},
	// 5: public key not on the curve.
	{5, "", "EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E17776969E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B", false},
	// 6: has_even_y(R) is false.
	{6, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"FFF97BD5755EEEA420453A14355235D382F6472F8568A18B2F057A14602975563CC27944640AC607CD107AE10923D9EF7A73C643E166BE5EBEAFA34B1AC553E2", false},
	// 7: negated message.
	{7, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"1FA62E331EDBC21C394792D2AB1100A7B432B013DF3F6FF4F99FCB33E0E1515F28890B3EDB6E7189B630448B515CE4F8622A954CFE545735AAEA5134FCCDB2BD", false},
	// 8: negated s value.
	{8, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769961764B3AA9B2FFCB6EF947B6887A226E8D7C93E00C5ED0C1834FF0D0C2E6DA6", false},
	// 9: sG - eP is infinite (x(inf) taken as 0).
	{9, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"0000000000000000000000000000000000000000000000000000000000000000123DDA8328AF9C23A94C1FEECFD123BA4FB73476F0D594DCB65C6425BD186051", false},
	// 10: sG - eP is infinite (x(inf) taken as 1).
	{10, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"00000000000000000000000000000000000000000000000000000000000000017615FBAF5AE28864013C099742DEADB4DBA87F11AC6754F93780D5A1837CF197", false},
	// 11: sig[0:32] is not an x coordinate on the curve.
	{11, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"4A298DACAE57395A15D0795DDBFD1DCB564DA82B0F269BC70A74F8220429BA1D69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B", false},
	// 12: sig[0:32] equals the field size.
	{12, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F69E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B", false},
	// 13: sig[32:64] equals the curve order.
	{13, "", "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E177769FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141", false},
	// 14: public key exceeds the field size.
	{14, "", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC30", "",
		"243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89",
		"6CFF5C3BA86C69EA4B7376F31A9BCB4F74C1976089B2D9963DA2E5543E17776969E89B4C5564D00349106B8497785DD7D1D713A8AE82B32FA79D5F7FC407D39B", false},
}

func mustHex32(t *testing.T, s string) *[32]byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hex32 %q", s)
	}
	return (*[32]byte)(b)
}

func newTestVerifier(t testing.TB, opts ...VerifierOption) *Verifier {
	t.Helper()
	v, err := NewVerifier(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

// TestBIP340Vectors checks verification (through the build's backend, with
// and without the key cache) and signing against the BIP-340 vectors.
func TestBIP340Vectors(t *testing.T) {
	t.Logf("backend %s", VerifyBackend)
	for _, cached := range []bool{false, true} {
		size := 0
		if cached {
			size = 100
		}
		v := newTestVerifier(t, WithPubKeyCacheSize(size))
		for _, tc := range bip340Vectors {
			msg := mustHex32(t, tc.msg)
			sigb, _ := hex.DecodeString(tc.sig)
			sig := (*[64]byte)(sigb)
			// Twice, so the second round is served from the cache, then
			// with the key as a much-used key has it (heatKey).
			for round := range 3 {
				got := false
				if key, ok := v.lookup(strings.ToLower(tc.pub)); ok {
					if round == 2 {
						heatKey(key)
					}
					got = v.verifySig(key, msg, sig)
				}
				if got != tc.valid {
					t.Errorf("vector %d (cache %v): verify = %v, want %v", tc.index, cached, got, tc.valid)
				}
				if cached {
					v.cache.Wait()
				}
			}
		}
	}
	for _, tc := range bip340Vectors {
		if tc.secret == "" {
			continue
		}
		sk, err := ParseSecretKey(tc.secret)
		if err != nil {
			t.Fatalf("vector %d: %v", tc.index, err)
		}
		if got := sk.PublicKey(); got != strings.ToLower(tc.pub) {
			t.Errorf("vector %d: public key %s, want %s", tc.index, got, strings.ToLower(tc.pub))
		}
		priv, err := sk.privateKey()
		if err != nil {
			t.Fatal(err)
		}
		sig, err := signHash(priv, mustHex32(t, tc.msg), mustHex32(t, tc.aux))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.ToUpper(hex.EncodeToString(sig[:])); got != tc.sig {
			t.Errorf("vector %d: signature %s, want %s", tc.index, got, tc.sig)
		}
	}
}

func signedEvent(t testing.TB, sk SecretKey, content string) *Event {
	t.Helper()
	e := &Event{CreatedAt: 1700000000, Kind: 1, Tags: Tags{{"t", "x"}}, Content: content}
	if err := e.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSignVerify(t *testing.T) {
	sk, err := GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := GenerateSecretKey()
	v := newTestVerifier(t)
	good := signedEvent(t, sk, "hello \u2028 😀")
	if good.PubKey != sk.PublicKey() || !good.CheckID() {
		t.Fatal("Sign did not set pubkey and id")
	}
	// Cross-check with go-nostr.
	g := gonostr.Event{ID: good.ID, PubKey: good.PubKey, CreatedAt: gonostr.Timestamp(good.CreatedAt), Kind: good.Kind,
		Tags: gonostr.Tags{{"t", "x"}}, Content: good.Content, Sig: good.Sig}
	if ok, err := g.CheckSignature(); !ok {
		t.Fatalf("go-nostr rejects our signature: %v", err)
	}

	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == '0' {
			b[i] = '1'
		} else {
			b[i] = '0'
		}
		return string(b)
	}
	otherEvent := signedEvent(t, other, "hello")
	tests := []struct {
		name   string
		mutate func(e *Event)
		want   error
	}{
		{"valid", func(e *Event) {}, nil},
		{"content changed", func(e *Event) { e.Content += "!" }, ErrIDMismatch},
		{"tag changed", func(e *Event) { e.Tags = Tags{{"t", "y"}} }, ErrIDMismatch},
		{"created_at changed", func(e *Event) { e.CreatedAt++ }, ErrIDMismatch},
		{"id not hex", func(e *Event) { e.ID = strings.ToUpper(e.ID) }, ErrIDMismatch},
		{"id empty", func(e *Event) { e.ID = "" }, ErrIDMismatch},
		{"sig flipped first byte", func(e *Event) { e.Sig = flip(e.Sig, 0) }, ErrBadSignature},
		{"sig flipped last byte", func(e *Event) { e.Sig = flip(e.Sig, 127) }, ErrBadSignature},
		{"sig too short", func(e *Event) { e.Sig = e.Sig[:126] }, ErrBadSignature},
		{"sig uppercase", func(e *Event) { e.Sig = strings.ToUpper(e.Sig) }, ErrBadSignature},
		{"sig of other author", func(e *Event) { e.Sig = otherEvent.Sig }, ErrBadSignature},
		{"pubkey swapped, id recomputed", func(e *Event) { e.PubKey = otherEvent.PubKey; e.ID = e.ComputeID() }, ErrBadSignature},
		{"pubkey not on curve", func(e *Event) {
			e.PubKey = "eefdea4cdb677750a420fee807eacf21eb9898ae79b9768766e4faa04a2d4a34"
			e.ID = e.ComputeID()
		}, ErrBadSignature},
		{"pubkey >= p", func(e *Event) {
			e.PubKey = "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc30"
			e.ID = e.ComputeID()
		}, ErrBadSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := *good
			tc.mutate(&e)
			for range 2 { // miss, then hit
				if err := v.Verify(&e); !errors.Is(err, tc.want) {
					t.Fatalf("Verify = %v, want %v", err, tc.want)
				}
				v.cache.Wait()
			}
		})
	}
	if ErrIDMismatch.Error() != "invalid: event id does not match its content" || ErrBadSignature.Error() != "invalid: bad signature" {
		t.Fatal("error texts changed")
	}
}

// TestVerifyGoNostrSigned verifies events signed by go-nostr.
func TestVerifyGoNostrSigned(t *testing.T) {
	v := newTestVerifier(t)
	for i := range 20 {
		skHex := gonostr.GeneratePrivateKey()
		g := gonostr.Event{CreatedAt: gonostr.Timestamp(1700000000 + i), Kind: i, Tags: gonostr.Tags{{"e", "\x00"}}, Content: strings.Repeat("\u2029\\", i)}
		if err := g.Sign(skHex); err != nil {
			t.Fatal(err)
		}
		e, err := ParseEvent([]byte(g.String()))
		if err != nil {
			t.Fatalf("ParseEvent(go-nostr output): %v\n%s", err, g.String())
		}
		if err := v.Verify(e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		sk, err := ParseSecretKey(skHex)
		if err != nil || sk.PublicKey() != g.PubKey || sk.Hex() != skHex {
			t.Fatalf("ParseSecretKey/PublicKey disagree with go-nostr: %v", err)
		}
	}
}

// TestVerifyCacheCollisionGuard plants a wrong key under a pubkey's cache
// entry and checks that it is not used.
func TestVerifyCacheCollisionGuard(t *testing.T) {
	v := newTestVerifier(t, WithPubKeyCacheSize(10))
	a, _ := GenerateSecretKey()
	b, _ := GenerateSecretKey()
	ea := signedEvent(t, a, "a")
	var xb [32]byte
	DecodeLowerHex(xb[:], b.PublicKey())
	kb, ok := liftX(&xb)
	if !ok {
		t.Fatal("liftX failed on a real key")
	}
	v.cache.Set(ea.PubKey, kb, 1)
	v.cache.Wait()
	if err := v.Verify(ea); err != nil {
		t.Fatalf("Verify used the planted key: %v", err)
	}
}

func TestVerifierConcurrent(t *testing.T) {
	v := newTestVerifier(t, WithPubKeyCacheSize(4))
	var keys []SecretKey
	for range 8 {
		k, _ := GenerateSecretKey()
		keys = append(keys, k)
	}
	var events []*Event
	for i := range 32 {
		events = append(events, signedEvent(t, keys[i%len(keys)], strings.Repeat("x", i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(events))
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range events {
				if err := v.Verify(e); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestVerifierOptions(t *testing.T) {
	if _, err := NewVerifier(WithPubKeyCacheSize(-1)); err == nil {
		t.Fatal("negative cache size accepted")
	}
	v := newTestVerifier(t, WithPubKeyCacheSize(0))
	if v.cache != nil {
		t.Fatal("cache size 0 must disable the cache")
	}
	sk, _ := GenerateSecretKey()
	if err := v.Verify(signedEvent(t, sk, "x")); err != nil {
		t.Fatal(err)
	}
}

func TestSecretKeys(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"0000000000000000000000000000000000000000000000000000000000000001", true},
		{"B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF", true},
		{"0000000000000000000000000000000000000000000000000000000000000000", false},
		{"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141", false}, // n
		{"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364140", true},  // n-1
		{"abc", false},
		{"zz00000000000000000000000000000000000000000000000000000000000001", false},
	} {
		_, err := ParseSecretKey(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseSecretKey(%s): err %v, want ok %v", tc.in, err, tc.ok)
		}
	}
	var zero SecretKey
	if zero.PublicKey() != "" {
		t.Error("zero key has a public key")
	}
	if err := (&Event{}).Sign(zero); err == nil {
		t.Error("signing with the zero key succeeded")
	}
	a, _ := GenerateSecretKey()
	b, _ := GenerateSecretKey()
	if a == b || a == zero {
		t.Error("GenerateSecretKey is not random")
	}
	// PublicKey agrees with btcec directly.
	_, pub := btcec.PrivKeyFromBytes(a[:])
	if got := a.PublicKey(); got != hex.EncodeToString(pub.SerializeCompressed()[1:]) {
		t.Error("PublicKey disagrees with btcec")
	}
}
