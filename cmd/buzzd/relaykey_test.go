package main

import (
	"io"
	"strings"
	"testing"
)

func TestRelayKeyConfig(t *testing.T) {
	good := strings.Repeat("1f", 32)
	cfg, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_RELAY_PRIVATE_KEY": good}), io.Discard)
	if err != nil || cfg.RelayKey == nil || cfg.RelayKey.Hex() != good || len(relayKeyOptions(cfg)) != 1 {
		t.Fatalf("cfg.RelayKey = %v, %v", cfg.RelayKey, err)
	}
	cfg, err = parseConfig("serve", nil, envMap(nil), io.Discard)
	if err != nil || cfg.RelayKey != nil || relayKeyOptions(cfg) != nil {
		t.Fatalf("unset key: %v, %v", cfg.RelayKey, err)
	}
	for _, bad := range []string{"zz" + good[2:], good[:62], strings.Repeat("ff", 32), strings.Repeat("00", 32)} {
		_, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_RELAY_PRIVATE_KEY": bad}), io.Discard)
		if err == nil {
			t.Fatalf("key %q accepted", bad)
		}
		if strings.Contains(err.Error(), bad) {
			t.Fatalf("the error echoes the secret: %v", err)
		}
		_, err = parseConfig("serve", []string{"-relay-private-key", bad}, envMap(nil), io.Discard)
		if err == nil || strings.Contains(err.Error(), bad) {
			t.Fatalf("flag: %v", err)
		}
	}
}
