package main

import (
	"io"
	"strings"
	"testing"
)

func TestAdminHostConfig(t *testing.T) {
	op := strings.Repeat("ab", 32)
	base := map[string]string{"RELAY_OPERATOR_PUBKEYS": op, "RELAY_OPERATOR_API_ORIGIN": "https://ops.example"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cfg, err := parseConfig("serve", nil, envMap(with("BUZZ_ADMIN_HOST", "Admin.Example:443")), io.Discard)
	if err != nil || cfg.AdminHost != "admin.example" {
		t.Fatalf("AdminHost = %q, %v", cfg.AdminHost, err)
	}
	if cfg, err := parseConfig("serve", nil, envMap(base), io.Discard); err != nil || cfg.AdminHost != "" {
		t.Fatalf("unset: %q, %v", cfg.AdminHost, err)
	}
	for name, env := range map[string]map[string]string{
		"no operators":          {"BUZZ_ADMIN_HOST": "admin.example"},
		"the relay's host":      with("BUZZ_ADMIN_HOST", "localhost:3000"),
		"the operator API host": with("BUZZ_ADMIN_HOST", "ops.example"),
		"a URL":                 with("BUZZ_ADMIN_HOST", "https://admin.example"),
		"a path":                with("BUZZ_ADMIN_HOST", "admin.example/x"),
	} {
		if _, err := parseConfig("serve", nil, envMap(env), io.Discard); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), op) {
			t.Errorf("%s: error echoes a key: %v", name, err)
		}
	}
}
