package operator_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/buzzrelay/buzz/operator"
)

// BenchmarkWrap measures what Wrap adds to every relay request: a path
// check, and a host normalization for /operator paths.
func BenchmarkWrap(b *testing.B) {
	st := openSQLiteB(b)
	h, err := operator.New(operator.WithOperators("0000000000000000000000000000000000000000000000000000000000000001"),
		operator.WithAPIOrigin(apiOrigin), operator.WithStore(st), operator.WithLogger(quiet()))
	if err != nil {
		b.Fatal(err)
	}
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	wrapped := h.Wrap(next)
	for _, bc := range []struct{ name, host, path string }{
		{"relay path", "team.example", "/"},
		{"operator path on a community host", "Team.Example:443", "/operator/communities"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "http://"+bc.host+bc.path, nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				wrapped.ServeHTTP(w, req)
			}
		})
	}
}
