//go:build dummy

// Package schnorrsig holds only C sources of libsecp256k1. This file is never
// built: it makes the directory a package so that `go mod vendor` copies
// it (see ../../../dummy.go).
package schnorrsig
