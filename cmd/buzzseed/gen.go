package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"

	"github.com/buzzrelay/buzz/nostr"
)

func runGen(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	n := fs.Int("n", 1_000_000, "number of events")
	authors := fs.Int("authors", 5000, "number of authors")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same events)")
	end := fs.String("end", time.Now().UTC().Format("2006-01-02"), "last day (UTC) of the month of timestamps")
	out := fs.String("out", "/tmp/buzzseed.jsonl", "output file (one event per line)")
	channels := fs.Int("channels", 0, "if > 0, a fifth of the notes become kind 9 chat messages in this many channels (h tag, Zipf)")
	vocab := fs.Int("vocab", 0, "if > 0, note text draws Zipf-distributed words from a vocabulary of this many (for search benchmarks); 0 = the 30 fixed words")
	sign := fs.Bool("sign", true, "sign the events (false writes a zero signature: COPY loads do not check signatures, and signing is most of gen's time)")
	_ = fs.Parse(args)
	endDay, err := time.Parse("2006-01-02", *end)
	if err != nil {
		return fmt.Errorf("-end: %w", err)
	}
	if *authors < 10 || *n < 2**authors {
		return fmt.Errorf("need -authors >= 10 and -n >= 2*authors")
	}
	start := time.Now()
	evs, keys := generate(*n, *authors, *seed, endDay.Add(24*time.Hour).Unix(), *channels, *vocab)
	fmt.Fprintf(os.Stderr, "generated %d events in %v\n", len(evs), time.Since(start).Round(time.Millisecond))
	if *sign {
		if err := signAll(ctx, evs, keys); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "signed on %d cores in %v\n", runtime.GOMAXPROCS(0), time.Since(start).Round(time.Millisecond))
	} else {
		zero := strings.Repeat("0", 128)
		for _, g := range evs {
			g.ev.Sig = zero
		}
	}
	f, err := os.Create(*out + ".tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	for _, g := range evs {
		buf = g.ev.AppendJSON(buf[:0])
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(*out+".tmp", *out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s in %v\n", *out, time.Since(start).Round(time.Millisecond))
	return nil
}

type genEvent struct {
	ev     *nostr.Event
	author int
}

// generate builds the unsigned corpus: every author's kind 0 and kind 3,
// then notes (kind 1, with hashtags, replies and mentions), reactions
// (kind 7) and long-form articles (kind 30023, one d per article) from
// Zipf-distributed authors, uniformly over the 30 days before endUnix.
func generate(n, nAuthors int, seed uint64, endUnix int64, nChannels, vocab int) ([]genEvent, []nostr.SecretKey) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	loremNote := func(rng *rand.Rand) string { return lorem(rng, words) }
	if vocab > 0 {
		v := vocabulary(vocab)
		z := rand.NewZipf(rng, 1.07, 1, uint64(vocab-1))
		loremNote = func(rng *rand.Rand) string { return loremZipf(rng, v, z) }
	}
	keys := make([]nostr.SecretKey, nAuthors)
	pubs := make([]string, nAuthors)
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < nAuthors; i += workers {
				keys[i] = deriveKey(seed, i)
				pubs[i] = keys[i].PublicKey()
			}
		}()
	}
	wg.Wait()
	authorZipf := rand.NewZipf(rng, 1.1, 20, uint64(nAuthors-1))
	var channelIDs []string
	var channelZipf *rand.Zipf
	if nChannels > 0 {
		for i := range nChannels {
			var u [16]byte
			binary.BigEndian.PutUint64(u[:8], seed)
			binary.BigEndian.PutUint64(u[8:], uint64(i)+1)
			u[6] = u[6]&0x0f | 0x40
			u[8] = u[8]&0x3f | 0x80
			h := hex.EncodeToString(u[:])
			channelIDs = append(channelIDs, h[:8]+"-"+h[8:12]+"-"+h[12:16]+"-"+h[16:20]+"-"+h[20:])
		}
		channelZipf = rand.NewZipf(rng, 1.2, 2, uint64(nChannels-1))
	}
	tagZipf := rand.NewZipf(rng, 1.1, 1, 499)
	const span = 30 * 24 * 3600
	ts := func() int64 { return endUnix - 1 - rng.Int64N(span) }
	hashtag := func() string { return "tag" + strconv.FormatUint(tagZipf.Uint64(), 10) }

	evs := make([]genEvent, 0, n)
	var notes []int // indexes of kind 1 events, reply and reaction targets
	add := func(author int, kind int, content string, tags nostr.Tags) {
		ev := &nostr.Event{PubKey: pubs[author], CreatedAt: ts(), Kind: kind, Tags: tags, Content: content}
		if ev.Tags == nil {
			ev.Tags = nostr.Tags{}
		}
		ev.ID = ev.ComputeID()
		evs = append(evs, genEvent{ev, author})
		if kind == 1 {
			notes = append(notes, len(evs)-1)
		}
	}
	target := func() genEvent {
		// Recent-biased: threads concentrate on some notes.
		k := len(notes) - 1 - int(float64(len(notes))*rng.Float64()*rng.Float64())
		return evs[notes[max(0, k)]]
	}
	for i := range nAuthors {
		add(i, 0, fmt.Sprintf(`{"name":"user%d","about":"seeded profile %d"}`, i, i), nil)
	}
	for i := range nAuthors {
		var tags nostr.Tags
		for range 20 + rng.IntN(80) {
			tags = append(tags, nostr.Tag{"p", pubs[rng.IntN(nAuthors)]})
		}
		add(i, 3, "", tags)
	}
	for len(evs) < n {
		author := int(authorZipf.Uint64())
		r := rng.IntN(100)
		switch {
		case nChannels > 0 && r < 14:
			add(author, 9, loremNote(rng), nostr.Tags{{"h", channelIDs[channelZipf.Uint64()]}})
		case r < 70 || len(notes) < 100:
			var tags nostr.Tags
			if rng.IntN(100) < 40 {
				for range 1 + rng.IntN(3) {
					tags = append(tags, nostr.Tag{"t", hashtag()})
				}
			}
			if rng.IntN(100) < 30 && len(notes) > 0 {
				root := target()
				tags = append(tags, nostr.Tag{"e", root.ev.ID, "", "root"}, nostr.Tag{"p", root.ev.PubKey})
			}
			if rng.IntN(100) < 20 {
				tags = append(tags, nostr.Tag{"p", pubs[int(authorZipf.Uint64())]})
			}
			add(author, 1, loremNote(rng), tags)
		case r < 95:
			t := target()
			add(author, 7, "+", nostr.Tags{{"e", t.ev.ID}, {"p", t.ev.PubKey}, {"k", "1"}})
		default:
			d := "article-" + strconv.Itoa(len(evs))
			tags := nostr.Tags{{"d", d}, {"title", "Article " + d}, {"t", hashtag()}}
			add(author, 30023, loremNote(rng)+"\n\n"+loremNote(rng)+"\n\n"+loremNote(rng), tags)
		}
	}
	return evs, keys
}

var words = []string{"nostr", "relay", "event", "community", "channel", "signal", "buzz", "garden", "river",
	"coffee", "morning", "build", "ship", "test", "postgres", "index", "query", "latency", "hello", "world",
	"bitcoin", "lightning", "zap", "note", "thread", "reply", "friend", "music", "photo", "sunset"}

func lorem(rng *rand.Rand, words []string) string {
	n := 5 + rng.IntN(40)
	b := make([]byte, 0, n*7)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, words[rng.IntN(len(words))]...)
	}
	return string(b)
}

// loremZipf is a note of 5–44 words drawn from v by z (word i has
// frequency ∝ 1/(1+i)^1.07, like natural text), with some punctuation.
func loremZipf(rng *rand.Rand, v []string, z *rand.Zipf) string {
	n := 5 + rng.IntN(40)
	b := make([]byte, 0, n*8)
	for i := range n {
		if i > 0 {
			if rng.IntN(8) == 0 {
				b = append(b, ',')
			}
			b = append(b, ' ')
		}
		w := v[z.Uint64()]
		if i == 0 {
			b = append(b, strings.ToUpper(w[:1])...)
			w = w[1:]
		}
		b = append(b, w...)
	}
	return string(append(b, '.'))
}

// syllables build the synthetic vocabulary.
var syllables = []string{"ka", "lo", "mi", "nu", "pe", "ra", "so", "ti", "vu", "ze", "ba", "do", "fi", "gu", "he", "jo", "ly", "me", "ni", "qua"}

// vocabulary returns n distinct deterministic words: word i spells i in
// base len(syllables), two syllables at least.
func vocabulary(n int) []string {
	out := make([]string, n)
	for i := range out {
		var w []byte
		k := i
		for j := 0; j < 2 || k > 0; j++ {
			w = append(w, syllables[k%len(syllables)]...)
			k /= len(syllables)
		}
		out[i] = string(w)
	}
	return out
}

// deriveKey returns author i's secret key for seed (SHA-256 of both; the
// chance that this is not a valid scalar is negligible and checked by Sign).
func deriveKey(seed uint64, i int) nostr.SecretKey {
	var in [24]byte
	copy(in[:8], "buzzseed")
	binary.BigEndian.PutUint64(in[8:], seed)
	binary.BigEndian.PutUint64(in[16:], uint64(i))
	return nostr.SecretKey(sha256.Sum256(in[:]))
}

// signAll signs every event with its author's key. It calls btcec directly
// with each author's key parsed once (Event.Sign re-derives the public key
// every time, doubling the cost); the ids were computed by generate.
func signAll(ctx context.Context, evs []genEvent, keys []nostr.SecretKey) error {
	privs := make([]*btcec.PrivateKey, len(keys))
	for i, k := range keys {
		privs[i], _ = btcec.PrivKeyFromBytes(k[:])
	}
	workers := runtime.GOMAXPROCS(0)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(evs); i += workers {
				if i%10000 == 0 && ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				g := evs[i]
				h, err := hex.DecodeString(g.ev.ID)
				if err != nil {
					errs <- err
					return
				}
				sig, err := schnorr.Sign(privs[g.author], h, schnorr.FastSign())
				if err != nil {
					errs <- fmt.Errorf("sign event %d: %w", i, err)
					return
				}
				g.ev.Sig = hex.EncodeToString(sig.Serialize())
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
