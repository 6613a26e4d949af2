package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/store/postgres"
)

func TestPing(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping on an open store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, postgres.ErrClosed) {
		t.Fatalf("Ping after Close = %v, want ErrClosed", err)
	}
}
