// Command minimal is the smallest complete buzz relay: the embedded store in
// ./buzz-data, one community for localhost:3000, served on ws://localhost:3000.
package main

import (
	"context"
	"log"
	"net/http"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/store/sqlite"
)

func main() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "./buzz-data")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	// Map the host clients connect with to a community (idempotent).
	if _, _, err := st.EnsureCommunity(ctx, "localhost:3000"); err != nil {
		log.Fatal(err)
	}
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st))
	if err != nil {
		log.Fatal(err)
	}
	log.Print("relay listening on ws://localhost:3000")
	log.Print(http.ListenAndServe("localhost:3000", relay))
}
