package postgres_test

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
)

func TestMainHost(t *testing.T) {
	url := pgtest.NewDatabase(t)
	storetest.MainHost(t, func(t *testing.T) (store.MainHostStore, func()) {
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		return st, func() { st.Close() }
	})
}
