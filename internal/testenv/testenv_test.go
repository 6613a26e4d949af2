package testenv

import (
	"net"
	"testing"
)

func TestPingRedisRefusesANonRedisPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 16)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte("HTTP/1.1 400\r\n"))
	}()
	if err := PingRedis(ln.Addr().String()); err == nil {
		t.Fatal("PingRedis accepted a peer that does not answer +PONG")
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := PingRedis(addr); err == nil {
		t.Fatal("PingRedis accepted a closed port")
	}
}

func TestRandomNameIsUnique(t *testing.T) {
	a, b := RandomName("t"), RandomName("t")
	if a == b || len(a) != 13 {
		t.Fatalf("RandomName: %q, %q", a, b)
	}
}
