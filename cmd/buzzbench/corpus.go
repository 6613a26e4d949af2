package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/buzzrelay/buzz/nostr"
)

// corpusVersion changes whenever generation changes, so that a cached corpus
// of an older generator is never reused.
const corpusVersion = 5

// corpusEvent is one signed event of the corpus.
type corpusEvent struct {
	Ev  nostr.Event
	Raw []byte // the signed event as JSON, exactly what is published
}

// author is a corpus identity. Keys derive from the seed, so they are never
// stored in the cache.
type author struct {
	SK  nostr.SecretKey
	Pub string
}

// corpus is the deterministic data set a benchmark publishes and queries.
//
// Events hold the main corpus in publish order (created_at ascending);
// Extras hold "live" events, kind 1 notes by separate authors with the
// LiveTopic tag and timestamps after every main event, published by the
// visible, fanout, mixed and slowreader scenarios. The main corpus keeps every
// replaceable (kinds 0, 3) and addressable (30023) coordinate unique, so a
// relay stores every main event and the oracle needs no replacement logic.
type corpus struct {
	Seed        uint64
	Size        int
	Authors     []author // main authors
	LiveAuthors []author // authors of Extras
	Events      []corpusEvent
	Extras      []corpusEvent
	Topics      []string // t tag vocabulary of the main corpus (seed-unique)
	LiveTopic   string
	Roots       []int // indexes into Events of kind 1 notes that other events reference
	Base, Span  int64 // main created_at lies in [Base, Base+Span+2 days)
	Fingerprint string
}

// corpusShape gives the size of each part for a main corpus of size events.
func corpusShape(size int) (authors, extras int) {
	authors = max(10, size/100)
	extras = max(50, size/5)
	return
}

var words = strings.Fields(`the a relay note event key sign bitcoin lightning zap nostr client
pubkey filter subscribe community channel thread reply garden coffee morning rust go code
build ship test bench latency queue socket frame index query store cache market music photo
film book river mountain city train weather today tomorrow friend family love open free
protocol network signal noise value energy time space light dark simple small fast slow
🤙 ⚡ 🌻 été naïve café 日本 データ`)

var topicWords = strings.Fields(`nostr bitcoin photography music art dev golang rust foodstr
plebchain zaps coffee books science news memes travel garden sport film gaming`)

// deriveKey returns the i-th deterministic secret key of the given stream.
func deriveKey(seed uint64, stream string, i int) (author, error) {
	for ctr := 0; ctr < 16; ctr++ {
		h := sha256.Sum256(fmt.Appendf(nil, "buzzbench/%d/%s/%d/%d", seed, stream, i, ctr))
		sk, err := nostr.ParseSecretKey(hex.EncodeToString(h[:]))
		if err != nil {
			continue // out of range: astronomically rare; try the next counter
		}
		return author{SK: sk, Pub: sk.PublicKey()}, nil
	}
	return author{}, errors.New("buzzbench: cannot derive a key")
}

func deriveKeys(seed uint64, stream string, n int) ([]author, error) {
	out := make([]author, n)
	for i := range out {
		a, err := deriveKey(seed, stream, i)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// text returns deterministic text of about n bytes.
func text(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(17) == 0 {
			b.WriteString(".\n")
		}
	}
	return b.String()
}

// lognormalLen draws a content length with the given median, clamped.
func lognormalLen(r *rand.Rand, median float64, lo, hi int) int {
	v := int(median * math.Exp(r.NormFloat64()*0.9))
	return min(max(v, lo), hi)
}

// skewed returns an index in [0,n) favouring small indexes, so that a few
// authors and threads are much more active than the rest.
func skewed(r *rand.Rand, n int) int {
	u := r.Float64()
	return min(int(float64(n)*u*u*u), n-1)
}

// buildCorpus generates the unsigned corpus (ids computed) for seed and size.
// It is deterministic: the same arguments always yield the same ids.
func buildCorpus(seed uint64, size int) (*corpus, error) {
	if size < 100 {
		return nil, fmt.Errorf("buzzbench: corpus size %d is below the minimum of 100", size)
	}
	nAuthors, nExtras := corpusShape(size)
	authors, err := deriveKeys(seed, "author", nAuthors)
	if err != nil {
		return nil, err
	}
	live, err := deriveKeys(seed, "live", 20)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &corpus{
		Seed: seed, Size: size, Authors: authors, LiveAuthors: live,
		// A one-month window per seed residue: corpora of different seeds
		// (runs against a relay that is not restarted) rarely overlap in time.
		Base: 1577836800 + int64(seed%64)*32*86400,
		Span: 30 * 86400,
	}
	tag := strconv.FormatUint(seed, 36)
	for _, w := range topicWords {
		c.Topics = append(c.Topics, w+"-"+tag)
	}
	c.LiveTopic = "buzzbench-live-" + tag

	var evs []nostr.Event
	add := func(a author, createdAt int64, kind int, tags nostr.Tags, content string) int {
		ev := nostr.Event{PubKey: a.Pub, CreatedAt: createdAt, Kind: kind, Tags: tags, Content: content}
		ev.ID = ev.ComputeID()
		evs = append(evs, ev)
		return len(evs) - 1
	}
	ts := func() int64 { return c.Base + r.Int64N(c.Span) }

	// Profiles and contact lists: one per author (unique coordinates).
	for i, a := range authors {
		prof, _ := json.Marshal(map[string]string{
			"name":    fmt.Sprintf("bench%d", i),
			"about":   text(r, 40+r.IntN(160)),
			"picture": fmt.Sprintf("https://example.com/avatars/%d.png", i),
			"nip05":   fmt.Sprintf("bench%d@example.com", i),
		})
		add(a, ts(), 0, nostr.Tags{}, string(prof))
	}
	for i, a := range authors {
		n := min(nAuthors-1, 20+r.IntN(130))
		tags := make(nostr.Tags, 0, n)
		for _, j := range r.Perm(nAuthors)[:n+1] {
			if j != i && len(tags) < n {
				tags = append(tags, nostr.Tag{"p", authors[j].Pub})
			}
		}
		add(a, ts(), 3, tags, "")
	}
	rest := size - 2*nAuthors
	nArticles := rest * 2 / 100
	nRoots := rest * 45 / 100
	nReplies := rest * 20 / 100
	nReactions := rest * 25 / 100
	nReposts := rest - nArticles - nRoots - nReplies - nReactions

	for i := 0; i < nArticles; i++ {
		a := authors[skewed(r, nAuthors)]
		tags := nostr.Tags{{"d", fmt.Sprintf("article-%d", i)}, {"title", text(r, 30)},
			{"published_at", strconv.FormatInt(c.Base, 10)}}
		for k := 0; k < 1+r.IntN(3); k++ {
			tags = append(tags, nostr.Tag{"t", c.Topics[r.IntN(len(c.Topics))]})
		}
		add(a, ts(), 30023, tags, text(r, lognormalLen(r, 4000, 1000, 20000)))
	}
	rootIdx := make([]int, 0, nRoots)
	for i := 0; i < nRoots; i++ {
		a := authors[skewed(r, nAuthors)]
		tags := nostr.Tags{}
		content := text(r, lognormalLen(r, 140, 5, 4000))
		for k := r.IntN(4) - 1; k > 0; k-- {
			t := c.Topics[r.IntN(len(c.Topics))]
			tags = append(tags, nostr.Tag{"t", t})
			content += " #" + t
		}
		if r.IntN(4) == 0 {
			tags = append(tags, nostr.Tag{"p", authors[r.IntN(nAuthors)].Pub})
		}
		rootIdx = append(rootIdx, add(a, ts(), 1, tags, content))
	}
	// Events that reference a root: replies, reactions and reposts, a few
	// hours to a day after it.
	referenced := map[int]bool{}
	target := func() nostr.Event {
		i := rootIdx[skewed(r, len(rootIdx))]
		referenced[i] = true
		return evs[i]
	}
	later := func(t int64) int64 { return t + 60 + r.Int64N(86400) }
	for i := 0; i < nReplies; i++ {
		t := target()
		tags := nostr.Tags{{"e", t.ID, "", "root"}, {"p", t.PubKey}}
		add(authors[skewed(r, nAuthors)], later(t.CreatedAt), 1, tags, text(r, lognormalLen(r, 80, 2, 1000)))
	}
	// One reaction per (author, target, emoji), as a relay keeping NIP-25
	// reactions unique stores them: a repeat is drawn again.
	reactions := []string{"+", "+", "+", "+", "🤙", "❤️", "-"}
	type reactionKey struct{ author, target, emoji string }
	reacted := map[reactionKey]bool{}
	for i := 0; i < nReactions; i++ {
		var a author
		var t nostr.Event
		var emoji string
		for {
			t, a, emoji = target(), authors[skewed(r, nAuthors)], reactions[r.IntN(len(reactions))]
			k := reactionKey{a.Pub, t.ID, emoji}
			if !reacted[k] {
				reacted[k] = true
				break
			}
		}
		tags := nostr.Tags{{"e", t.ID}, {"p", t.PubKey}, {"k", "1"}}
		add(a, later(t.CreatedAt), 7, tags, emoji)
	}
	for i := 0; i < nReposts; i++ {
		t := target()
		tags := nostr.Tags{{"e", t.ID, ""}, {"p", t.PubKey}}
		add(authors[skewed(r, nAuthors)], later(t.CreatedAt), 6, tags, "")
	}
	// Publish order: created_at ascending, generation order on ties.
	order := make([]int, len(evs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(evs[a].CreatedAt - evs[b].CreatedAt) })
	pos := make([]int, len(evs))
	c.Events = make([]corpusEvent, len(evs))
	var maxTS int64
	for p, i := range order {
		c.Events[p].Ev = evs[i]
		pos[i] = p
		maxTS = max(maxTS, evs[i].CreatedAt)
	}
	seen := map[int]bool{}
	for i := range referenced {
		seen[pos[i]] = true
	}
	for p := range c.Events {
		if seen[p] {
			c.Roots = append(c.Roots, p)
		}
	}
	for i := 0; i < nExtras; i++ {
		a := live[i%len(live)]
		ev := nostr.Event{PubKey: a.Pub, CreatedAt: maxTS + 1 + int64(i), Kind: 1,
			Tags: nostr.Tags{{"t", c.LiveTopic}}, Content: text(r, lognormalLen(r, 140, 5, 2000))}
		ev.ID = ev.ComputeID()
		c.Extras = append(c.Extras, corpusEvent{Ev: ev})
	}
	c.Fingerprint = c.fingerprint()
	return c, nil
}

// fingerprint is the sha256 over every event id in corpus order.
func (c *corpus) fingerprint() string {
	h := sha256.New()
	for _, e := range c.Events {
		h.Write([]byte(e.Ev.ID))
	}
	for _, e := range c.Extras {
		h.Write([]byte(e.Ev.ID))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keyFor returns the secret key of a corpus pubkey.
func (c *corpus) keyFor(pub string) (nostr.SecretKey, bool) {
	for _, a := range c.Authors {
		if a.Pub == pub {
			return a.SK, true
		}
	}
	for _, a := range c.LiveAuthors {
		if a.Pub == pub {
			return a.SK, true
		}
	}
	return nostr.SecretKey{}, false
}

// sign signs every event in parallel and fills Raw. It checks that signing
// did not change an id.
func (c *corpus) sign(ctx context.Context, workers int) error {
	keys := map[string]nostr.SecretKey{}
	for _, a := range c.Authors {
		keys[a.Pub] = a.SK
	}
	for _, a := range c.LiveAuthors {
		keys[a.Pub] = a.SK
	}
	all := make([]*corpusEvent, 0, len(c.Events)+len(c.Extras))
	for i := range c.Events {
		all = append(all, &c.Events[i])
	}
	for i := range c.Extras {
		all = append(all, &c.Extras[i])
	}
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(all); i += workers {
				if ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				e := all[i]
				want := e.Ev.ID
				if err := e.Ev.Sign(keys[e.Ev.PubKey]); err != nil {
					errs[w] = err
					return
				}
				if e.Ev.ID != want {
					errs[w] = fmt.Errorf("buzzbench: id changed on signing (%s)", want)
					return
				}
				e.Raw = e.Ev.AppendJSON(nil)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cacheHeader is the first line of a corpus cache file.
type cacheHeader struct {
	Version     int    `json:"version"`
	Seed        uint64 `json:"seed"`
	Size        int    `json:"size"`
	Events      int    `json:"events"`
	Extras      int    `json:"extras"`
	Fingerprint string `json:"fingerprint"`
}

func cachePath(dir string, seed uint64, size int) string {
	return filepath.Join(dir, fmt.Sprintf("corpus-v%d-seed%d-n%d.jsonl", corpusVersion, seed, size))
}

// loadCorpus returns the signed corpus for seed and size, reading it from
// the cache directory when a valid file is there and otherwise generating,
// signing and caching it. cacheDir "" disables caching. fromCache reports
// whether signing was skipped.
func loadCorpus(ctx context.Context, cacheDir string, seed uint64, size int) (c *corpus, fromCache bool, err error) {
	c, err = buildCorpus(seed, size)
	if err != nil {
		return nil, false, err
	}
	if cacheDir != "" {
		if err := c.readCache(cachePath(cacheDir, seed, size)); err == nil {
			return c, true, nil
		}
	}
	if err := c.sign(ctx, 0); err != nil {
		return nil, false, err
	}
	if cacheDir != "" {
		if err := c.writeCache(cacheDir); err != nil {
			return c, false, fmt.Errorf("buzzbench: write corpus cache: %w", err)
		}
	}
	return c, false, nil
}

// readCache fills Raw and the signatures from a cache file. Every cached
// event must be the generated event, byte for byte except the signature
// (signatures use random auxiliary data, ids do not).
func (c *corpus) readCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 4<<20)
	if !sc.Scan() {
		return errors.New("empty cache")
	}
	var h cacheHeader
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return err
	}
	if h.Version != corpusVersion || h.Seed != c.Seed || h.Size != c.Size ||
		h.Events != len(c.Events) || h.Extras != len(c.Extras) || h.Fingerprint != c.Fingerprint {
		return errors.New("cache does not match")
	}
	fill := func(dst []corpusEvent) error {
		for i := range dst {
			if !sc.Scan() {
				return errors.New("truncated cache")
			}
			ev, err := nostr.ParseEvent(sc.Bytes())
			if err != nil {
				return err
			}
			want := dst[i].Ev
			want.Sig = ev.Sig
			raw := want.AppendJSON(nil)
			if string(raw) != sc.Text() {
				return errors.New("cached event differs from the generated one")
			}
			dst[i].Ev.Sig = ev.Sig
			dst[i].Raw = raw
		}
		return nil
	}
	if err := fill(c.Events); err != nil {
		return err
	}
	return fill(c.Extras)
}

func (c *corpus) writeCache(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := cachePath(dir, c.Seed, c.Size)
	tmp, err := os.CreateTemp(dir, ".corpus-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	h, _ := json.Marshal(cacheHeader{corpusVersion, c.Seed, c.Size, len(c.Events), len(c.Extras), c.Fingerprint})
	w.Write(h)
	w.WriteByte('\n')
	for _, part := range [][]corpusEvent{c.Events, c.Extras} {
		for _, e := range part {
			w.Write(e.Raw)
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// rngFor returns a deterministic generator for one purpose of one run.
func rngFor(seed uint64, purpose string, run int) *rand.Rand {
	h := sha256.Sum256(fmt.Appendf(nil, "%d/%s/%d", seed, purpose, run))
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
}
