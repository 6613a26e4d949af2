//go:build dummy

// This file only makes `go mod vendor` copy the C sources: it vendors the
// packages of a module's import graph under every build tag, and a
// directory holding only C files is no package. Each source directory has
// a dummy.go (never built) that makes it one, and this file imports them
// (see https://github.com/golang/go/issues/26366; go-ethereum does the same).

package libsecp256k1

import (
	_ "github.com/buzzrelay/buzz/nostr/internal/libsecp256k1/include"
	_ "github.com/buzzrelay/buzz/nostr/internal/libsecp256k1/src"
	_ "github.com/buzzrelay/buzz/nostr/internal/libsecp256k1/src/modules/extrakeys"
	_ "github.com/buzzrelay/buzz/nostr/internal/libsecp256k1/src/modules/schnorrsig"
)
