package main

import (
	"github.com/buzzrelay/buzz/cluster"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseConfigCluster(t *testing.T) {
	cfg, err := parseConfig("serve", nil, envMap(map[string]string{
		"REDIS_URL":                  "redis://:secret@127.0.0.1:6379/0",
		"BUZZ_POD_NAME":              "pod-a",
		"BUZZ_REDIS_NAMESPACE":       "buzz.test_1",
		"BUZZ_RATE_LIMIT_EVENTS":     "50",
		"BUZZ_RATE_LIMIT_WINDOW":     "10s",
		"BUZZ_REDIS_CONNECT_TIMEOUT": "3s",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := ClusterConfig{RedisURL: "redis://:secret@127.0.0.1:6379/0", PodName: "pod-a", RedisNamespace: "buzz.test_1",
		RateLimitEvents: 50, RateLimitWindow: 10 * time.Second, RedisConnectTimeout: 3 * time.Second}
	if cfg.Cluster != want {
		t.Fatalf("cluster config = %+v, want %+v", cfg.Cluster, want)
	}
	cfg, err = parseConfig("serve", nil, envMap(nil), io.Discard)
	if err != nil || cfg.Cluster != (ClusterConfig{}) {
		t.Fatalf("default: %+v, %v", cfg.Cluster, err)
	}
	if name := cluster.DefaultPodName(); name == "" || strings.ContainsAny(name, " \t") || !cluster.IsPodName(name) {
		t.Fatalf("default pod name %q", name)
	}

	for name, env := range map[string]map[string]string{
		"http URL":          {"REDIS_URL": "http://127.0.0.1:6379"},
		"no scheme":         {"REDIS_URL": "127.0.0.1:6379"},
		"pod with space":    {"BUZZ_POD_NAME": "pod a"},
		"pod too long":      {"BUZZ_POD_NAME": strings.Repeat("p", 129)},
		"namespace colon":   {"BUZZ_REDIS_NAMESPACE": "a:b"},
		"negative limit":    {"BUZZ_RATE_LIMIT_EVENTS": "-1"},
		"limit not number":  {"BUZZ_RATE_LIMIT_EVENTS": "ten"},
		"window too long":   {"BUZZ_RATE_LIMIT_WINDOW": "25h"},
		"window not a time": {"BUZZ_RATE_LIMIT_WINDOW": "5"},
	} {
		_, err := parseConfig("serve", nil, envMap(env), io.Discard)
		if err == nil {
			t.Errorf("%s: parseConfig succeeded", name)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error leaks a secret: %v", name, err)
		}
	}
}
