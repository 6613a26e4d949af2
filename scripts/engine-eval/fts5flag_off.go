//go:build nofts5

package main

const noFTS5 = true
