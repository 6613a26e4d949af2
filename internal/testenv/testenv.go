// Package testenv is the one place tests learn whether the services they
// need (PostgreSQL, Redis) are there, and what happens when they are not:
// the test skips with a message, or fails when CI=true, so a CI run can
// never pass by skipping. Like the Go project's internal/testenv, it is for
// tests only and imports nothing of buzz.
//
// PostgreSQL databases come from store/postgres/pgtest, which uses
// Unavailable for the same rule.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// DefaultRedisAddr is the Redis tests use when BUZZ_TEST_REDIS is unset.
const DefaultRedisAddr = "127.0.0.1:6379"

// InCI reports whether the tests run under CI=true, where a missing service
// is a failure, not a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends tb because a service it needs is missing: a skip naming
// the service and how to get it, or, with CI=true, a failure.
func Unavailable(tb testing.TB, service string, err error) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("%s is unavailable and CI=true (not skipping): %v", service, err)
	}
	tb.Skipf("%s is unavailable, skipping (run ./scripts/test.sh, or set CI=true to fail instead): %v", service, err)
}

// RedisAddr is the host:port of the tests' Redis: BUZZ_TEST_REDIS, else
// DefaultRedisAddr.
func RedisAddr() string {
	if a := os.Getenv("BUZZ_TEST_REDIS"); a != "" {
		return a
	}
	return DefaultRedisAddr
}

// NeedRedis returns RedisAddr after checking that a Redis answers PING
// there; otherwise it ends tb through Unavailable.
func NeedRedis(tb testing.TB) string {
	tb.Helper()
	addr := RedisAddr()
	if err := PingRedis(addr); err != nil {
		Unavailable(tb, "Redis at "+addr, err)
	}
	return addr
}

// PingRedis sends an inline PING to the Redis at addr and expects +PONG
// within a second.
func PingRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "+PONG\r\n" {
		return fmt.Errorf("unexpected PING answer %q", buf[:n])
	}
	return nil
}

// RandomName returns prefix followed by 12 random hex digits: a Redis
// namespace, database or pod name no other test run shares.
func RandomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
