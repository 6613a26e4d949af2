package store_test

import (
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/store"
)

func TestCompareSearchHits(t *testing.T) {
	type hit struct {
		rec   store.Record
		score float64
	}
	rec := func(id string, at int64) store.Record { return store.Record{ID: id, CreatedAt: at} }
	hits := []hit{
		{rec("b", 10), 1}, // tie on score and time: id ascending
		{rec("c", 20), 1}, // newer, same score
		{rec("a", 5), 2},  // most relevant, oldest
		{rec("a", 10), 1},
		{rec("d", 30), 0.5}, // newest, least relevant
	}
	slices.SortFunc(hits, func(x, y hit) int { return store.CompareSearchHits(x.rec, x.score, y.rec, y.score) })
	var got []string
	for _, h := range hits {
		got = append(got, h.rec.ID)
	}
	if want := []string{"a", "c", "a", "b", "d"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if hits[0].rec.CreatedAt != 5 || hits[2].rec.CreatedAt != 10 {
		t.Fatalf("the two a's are out of place: %+v", hits)
	}
}
