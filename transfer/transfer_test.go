package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/transfer"
)

func openSQLite(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestImportTenancy: an export's records reach only the community they
// name. A community whose host belongs to another community of the
// destination is refused and changes nothing, and a record whose host no
// community record introduced is refused.
func TestImportTenancy(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t)
	alice := storetest.NewAuthor(t)
	a := storetest.Community(t, src, "a.example")
	for i := range 5 {
		storetest.MustSave(t, src, a, alice.Event(t, nostr.KindNote, int64(1_700_000_000+i), "a"))
	}
	var exp bytes.Buffer
	if _, err := transfer.Export(ctx, &exp, src, transfer.ExportOptions{}); err != nil {
		t.Fatal(err)
	}

	// The destination already serves a.example as another community.
	dst := openSQLite(t)
	other := storetest.Community(t, dst, "a.example")
	_, err := transfer.Import(ctx, bytes.NewReader(exp.Bytes()), dst, transfer.ImportOptions{})
	var le *transfer.LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "another community") {
		t.Fatalf("import over a foreign host: %v", err)
	}
	if n := storetest.CountOf(t, dst, other, nostr.Filter{}); n != 0 {
		t.Fatalf("%d events reached the destination's own a.example", n)
	}

	// An event line for a host the file never introduced.
	lines := strings.Split(exp.String(), "\n")
	forged := strings.Join([]string{lines[0], strings.Replace(lines[len(lines)-3], `"host":"a.example"`, `"host":"b.example"`, 1)}, "\n")
	fresh := openSQLite(t)
	_, err = transfer.Import(ctx, strings.NewReader(forged+"\n"), fresh, transfer.ImportOptions{})
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), `host "b.example" has no community record`) {
		t.Fatalf("event of an undeclared host: %v", err)
	}
	if _, err := fresh.LookupHost(ctx, "b.example"); err == nil {
		t.Fatal("b.example was created")
	}

	// The export itself imports cleanly into an empty store, twice.
	for i, wantNew := range []int64{5, 0} {
		st, err := transfer.Import(ctx, bytes.NewReader(exp.Bytes()), fresh, transfer.ImportOptions{Batch: 2, Workers: 3})
		if err != nil || st.Events != 5 || st.New != wantNew || !st.Complete {
			t.Fatalf("import %d: %+v, %v", i+1, st, err)
		}
	}
}

// FuzzParseLine: the line parser never panics, and what it accepts as an
// event is an event that re-encodes to JSON it accepts again.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"event","host":"a.example","event":{"id":"` + strings.Repeat("a", 64) + `","pubkey":"` + strings.Repeat("b", 64) +
			`","created_at":1,"kind":1,"tags":[["e","x"]],"content":"hi","sig":"` + strings.Repeat("c", 128) + `"}}`,
		`{"type":"community","host":"a.example","id":"0190c8a4-0000-7000-8000-000000000001","created_at":1,"access":"open","profile":{},"aliases":[]}`,
		`{"type":"audit","host":"a.example","seq":1,"prev_hash":"","hash":"","version":1,"action":"x","object":"","detail":{},"time_us":1}`,
		`{"type":"end","communities":1,"events":0,"records":1}`,
		`{"type":"relay_key","secret_key":"` + strings.Repeat("1", 64) + `"}`,
		`{"type":"workflow_run","host":"a.example","id":"x"}`, `{"type":"schedule_fire","host":"a.example","workflow":"x","slot_ms":1}`,
		`{"type":"nope","host":"a"}`, `{"type":"event","host":"a"}`, `{}`, `[]`, `null`, `{"type":1}`, ``, `{"type":"event","host":"a","event":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		typ, host, ev, err := transfer.ParseLine(line)
		if err != nil {
			return
		}
		if typ == "" || (typ != transfer.TypeEnd && typ != transfer.TypeRelayKey && host == "") {
			t.Fatalf("accepted %q without type or host", line)
		}
		if typ == transfer.TypeEvent {
			if ev == nil {
				t.Fatal("event record without an event")
			}
			again := append(append([]byte(`{"type":"event","host":"a.example","event":`), ev.AppendJSON(nil)...), '}')
			_, _, ev2, err := transfer.ParseLine(again)
			if err != nil || ev2.ID != ev.ID || ev2.Content != ev.Content || ev2.Sig != ev.Sig {
				t.Fatalf("re-encoded event refused: %v", err)
			}
		}
	})
}

// full is every interface Export and Import use: both backends implement
// them all, so no state is skipped silently.
type full interface {
	transfer.Source
	transfer.MemberSource
	transfer.ChannelSource
	transfer.NameSource
	transfer.ModerationSource
	transfer.AuditSource
	transfer.Destination
	transfer.MemberDestination
	transfer.ChannelDestination
	transfer.NameDestination
	transfer.ModerationDestination
	transfer.AuditDestination
	transfer.WorkflowSource
	transfer.WorkflowDestination
	transfer.RelayKeyStore
}

var (
	_ full = (*embedded.Store)(nil)
	_ full = (*postgres.Store)(nil)
)

// TestRoundTripEmbedded: an export imported into a new embedded store
// exports to the same bytes; a deletion request restores its tombstone and
// appends no second audit entry.
func TestRoundTripEmbedded(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t)
	alice := storetest.NewAuthor(t)
	a := storetest.Community(t, src, "a.example")
	var notes []*nostr.Event
	for i := range 4 {
		ev := alice.Event(t, nostr.KindNote, int64(1_700_000_000+i), "a")
		notes = append(notes, ev)
		storetest.MustSave(t, src, a, ev)
	}
	storetest.MustSave(t, src, a, alice.Deletion(t, 1_700_000_100, []string{notes[1].ID}, nil))
	var want bytes.Buffer
	if _, err := transfer.Export(ctx, &want, src, transfer.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	dst, err := embedded.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := transfer.Import(ctx, bytes.NewReader(want.Bytes()), dst, transfer.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := transfer.Export(ctx, &got, dst, transfer.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("export after import differs:\n%s\n%s", want.String(), got.String())
	}
	storetest.SaveIs(t, dst, a, notes[1], store.ErrDeleted)
}

// TestImportStopsAtRefusedEvent: within one batch, an event the store
// refuses (two different h tags) stops the import at its line on either
// backend: the events before it are stored, none after it; with KeepGoing
// it is counted as refused and the rest are stored.
func TestImportStopsAtRefusedEvent(t *testing.T) {
	ctx := context.Background()
	alice := storetest.NewAuthor(t)
	evs := []*nostr.Event{
		alice.Event(t, nostr.KindNote, 1_700_000_000, "before"),
		alice.Event(t, nostr.KindNote, 1_700_000_001, "two groups", nostr.Tag{"h", "one"}, nostr.Tag{"h", "two"}),
		alice.Event(t, nostr.KindNote, 1_700_000_002, "after"),
	}
	cid := tenant.NewCommunityID()
	src := `{"buzz_export":1}` + "\n" +
		`{"type":"community","host":"a.example","id":"` + cid.String() + `","created_at":1700000000,"access":"open","profile":{"name":"","description":"","icon":"","contact":""},"aliases":[]}` + "\n"
	for _, ev := range evs {
		src += `{"type":"event","host":"a.example","event":` + string(ev.AppendJSON(nil)) + "}\n"
	}
	src += `{"type":"end","communities":1,"events":3,"records":4}` + "\n"
	for _, b := range []struct {
		name string
		open func(t *testing.T) backend
	}{
		{"embedded", func(t *testing.T) backend { return openSQLite(t) }},
		{"postgres", func(t *testing.T) backend { return openPostgres(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			for _, keepGoing := range []bool{false, true} {
				dst := b.open(t)
				st, err := transfer.Import(ctx, strings.NewReader(src), dst, transfer.ImportOptions{KeepGoing: keepGoing})
				var le *transfer.LineError
				if keepGoing {
					if err != nil || st.New != 2 || st.Refused != 1 {
						t.Fatalf("keep going: %+v, %v", st, err)
					}
				} else if !errors.As(err, &le) || le.Line != 4 || !strings.Contains(err.Error(), "h tag") || st.New != 1 {
					t.Fatalf("import = %+v, %v; want line 4 refused for its h tags, one event stored", st, err)
				}
				want := []string{evs[0].ID}
				if keepGoing {
					want = []string{evs[2].ID, evs[0].ID}
				}
				if got := storetest.QueryIDs(t, dst, cid, nostr.Filter{}); !slices.Equal(got, want) {
					t.Fatalf("keep going %v: stored %v, want %v", keepGoing, got, want)
				}
			}
		})
	}
}

// backend is a destination whose events a test reads back.
type backend interface {
	transfer.Destination
	store.EventStore
}

func openPostgres(t *testing.T) *postgres.Store {
	t.Helper()
	pg, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	return pg
}

// TestImportReactionSlot: an export holding two reactions for one slot
// (author, target, emoji) stores the first on the embedded store, which
// keeps one reaction per slot, and counts the second as obsolete.
func TestImportReactionSlot(t *testing.T) {
	ctx := context.Background()
	alice := storetest.NewAuthor(t)
	target := alice.Event(t, nostr.KindNote, 1_700_000_000, "target")
	first := alice.Event(t, 7, 1_700_000_001, "🔥", nostr.Tag{"e", target.ID})
	second := alice.Event(t, 7, 1_700_000_002, "🔥", nostr.Tag{"e", target.ID})
	cid := tenant.NewCommunityID()
	src := `{"buzz_export":1}` + "\n" +
		`{"type":"community","host":"a.example","id":"` + cid.String() + `","created_at":1700000000,"access":"open","profile":{"name":"","description":"","icon":"","contact":""},"aliases":[]}` + "\n"
	for _, ev := range []*nostr.Event{target, first, second} {
		src += `{"type":"event","host":"a.example","event":` + string(ev.AppendJSON(nil)) + "}\n"
	}
	src += `{"type":"end","communities":1,"events":3,"records":4}` + "\n"
	dst := openSQLite(t)
	st, err := transfer.Import(ctx, strings.NewReader(src), dst, transfer.ImportOptions{})
	if err != nil || st.New != 2 || st.Obsolete != 1 {
		t.Fatalf("import = %+v, %v; want 2 new, 1 obsolete", st, err)
	}
	if got, want := storetest.QueryIDs(t, dst, cid, nostr.Filter{Kinds: []int{7}}), []string{first.ID}; !slices.Equal(got, want) {
		t.Fatalf("reactions stored: %v, want %v", got, want)
	}
}

// TestImportRefusesBadSignatures: events are verified in batches of
// signatures; a bad signature or id anywhere in them (here in the first
// and the third chunk of 64) refuses that event alone, on the line it
// came from.
func TestImportRefusesBadSignatures(t *testing.T) {
	ctx := context.Background()
	alice, bob := storetest.NewAuthor(t), storetest.NewAuthor(t)
	cid := tenant.NewCommunityID()
	src := `{"buzz_export":1}` + "\n" +
		`{"type":"community","host":"a.example","id":"` + cid.String() + `","created_at":1700000000,"access":"open","profile":{"name":"","description":"","icon":"","contact":""},"aliases":[]}` + "\n"
	const n, badID, badSig = 150, 10, 140
	var bad []string
	for i := range n {
		a := alice
		if i%3 == 0 {
			a = bob
		}
		ev := a.Event(t, nostr.KindNote, 1_700_000_000+int64(i), "note "+strconv.Itoa(i))
		switch i {
		case badID:
			ev.Content += "!"
		case badSig:
			c := byte('0')
			if ev.Sig[70] == '0' {
				c = '1'
			}
			ev.Sig = ev.Sig[:70] + string(c) + ev.Sig[71:]
		}
		if i == badID || i == badSig {
			bad = append(bad, ev.ID)
		}
		src += `{"type":"event","host":"a.example","event":` + string(ev.AppendJSON(nil)) + "}\n"
	}
	src += `{"type":"end","communities":1,"events":` + strconv.Itoa(n) + `,"records":` + strconv.Itoa(n+1) + "}\n"

	dst := openSQLite(t)
	st, err := transfer.Import(ctx, strings.NewReader(src), dst, transfer.ImportOptions{KeepGoing: true})
	if err != nil || st.New != n-2 || st.Refused != 2 {
		t.Fatalf("keep going: %+v, %v; want %d new, 2 refused", st, err, n-2)
	}
	if got := storetest.QueryIDs(t, dst, cid, nostr.Filter{IDs: bad}); len(got) != 0 {
		t.Fatalf("stored the refused events %v", got)
	}
	dst = openSQLite(t)
	st, err = transfer.Import(ctx, strings.NewReader(src), dst, transfer.ImportOptions{})
	var le *transfer.LineError
	if !errors.As(err, &le) || le.Line != 3+badID || !errors.Is(err, nostr.ErrIDMismatch) || st.New != badID {
		t.Fatalf("import = %+v, %v; want line %d refused for its id, %d events stored", st, err, 3+badID, badID)
	}
}
