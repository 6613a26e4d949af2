package buzz

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Health endpoints. The relay does not register them: its embedder mounts
// HealthzHandler and ReadyzHandler where it wants them (buzzd serves them
// on the relay's Mux at these paths, for any Host: they hold no community
// data and bind no community), so an embedder's own /healthz never
// conflicts with the relay's.
//
//	GET /healthz  liveness: 200 {"status":"ok"} until Shutdown has finished,
//	              then 503 {"status":"stopped"}.
//	GET /readyz   readiness: 200 {"status":"ready","checks":{…}} when the
//	              relay is not shutting down, the store answers and the
//	              broker can carry messages (and every check a feature
//	              added passes: the workflow host's "workflows", every
//	              engine loop running); otherwise 503
//	              {"status":"degraded","checks":{…}} where each check is
//	              "ok" or names what failed ("unavailable", "shutting down").
//
// The store is checked when it implements Pinger, the broker when it
// implements ReadyChecker (the Redis broker does; the in-process one is
// always ready). Causes are logged, never served.
const (
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
)

// ReadyTimeout bounds each readiness check.
const ReadyTimeout = 2 * time.Second

// Pinger may be implemented by the store given to WithStore (store/embedded
// and store/postgres do). Ping reports whether the store can serve; the
// readiness check ("store" in /readyz and Relay.Ready) calls it, bounded
// by ReadyTimeout. A store without it is assumed ready.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ReadyChecker may be implemented by the broker given to WithBroker (the
// Redis broker of pubsub/redis does). Ready reports whether the broker can
// carry messages; the readiness check ("broker") calls it, bounded by
// ReadyTimeout. A broker without it is assumed ready.
type ReadyChecker interface {
	Ready(ctx context.Context) error
}

// HealthzHandler serves liveness (see HealthzPath) for GET requests. Mount
// it where the deployment probes it, e.g.
//
//	rel.Mux().Handle("GET "+buzz.HealthzPath, rel.HealthzHandler())
func (r *Relay) HealthzHandler() http.Handler { return http.HandlerFunc(r.serveHealthz) }

// ReadyzHandler serves readiness (see ReadyzPath): every check of Ready,
// each named with its state. Mount it like HealthzHandler.
func (r *Relay) ReadyzHandler() http.Handler { return http.HandlerFunc(r.serveReadyz) }

// Ready reports whether the relay can serve: not shutting down, the store
// reachable and the broker able to carry messages. The error names the
// first dependency that failed.
func (r *Relay) Ready(ctx context.Context) error {
	checks, ok := r.readiness(ctx)
	if ok {
		return nil
	}
	names := []string{"relay", "store", "broker"}
	for _, c := range r.features.readyChecks {
		names = append(names, c.name)
	}
	for _, name := range names {
		if v := checks[name]; v != "ok" {
			return &NotReadyError{Dependency: name, State: v}
		}
	}
	return &NotReadyError{Dependency: "relay", State: "unavailable"}
}

// NotReadyError is Ready's error: Dependency is "relay", "store",
// "broker" or the name of a feature's check (Host.AddReadyCheck: the
// workflow host's "workflows"); State is what /readyz reports for it.
type NotReadyError struct {
	Dependency string
	State      string
}

func (e *NotReadyError) Error() string { return "buzz: not ready: " + e.Dependency + " " + e.State }

func (r *Relay) shuttingDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shutdown
}

func (r *Relay) stopped() bool {
	select {
	case <-r.closed:
		return true
	default:
		return false
	}
}

// readiness runs every check (concurrently, each bounded by ReadyTimeout).
func (r *Relay) readiness(ctx context.Context) (map[string]string, bool) {
	checks := map[string]string{"relay": "ok", "store": "ok", "broker": "ok"}
	if r.shuttingDown() {
		checks["relay"] = "shutting down"
	}
	type result struct {
		name string
		err  error
	}
	var probes []func(context.Context) result
	if p, ok := r.cfg.store.(Pinger); ok {
		probes = append(probes, func(ctx context.Context) result { return result{"store", p.Ping(ctx)} })
	}
	if b, ok := r.cfg.broker.(ReadyChecker); ok {
		probes = append(probes, func(ctx context.Context) result { return result{"broker", b.Ready(ctx)} })
	}
	for _, c := range r.features.readyChecks {
		checks[c.name] = "ok"
		probes = append(probes, func(ctx context.Context) result { return result{c.name, c.check(ctx)} })
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	res := make(chan result, len(probes))
	for _, p := range probes {
		go func() { res <- p(ctx) }()
	}
	for range probes {
		x := <-res
		if x.err != nil {
			checks[x.name] = "unavailable"
			r.log.Warn("buzz: readiness check failed", "dependency", x.name, "err", x.err)
		}
	}
	ok := true
	for _, v := range checks {
		ok = ok && v == "ok"
	}
	return checks, ok
}

func (r *Relay) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	if r.stopped() {
		writeHealth(w, http.StatusServiceUnavailable, map[string]any{"status": "stopped"})
		return
	}
	writeHealth(w, http.StatusOK, map[string]any{"status": "ok"})
}

func (r *Relay) serveReadyz(w http.ResponseWriter, req *http.Request) {
	checks, ok := r.readiness(req.Context())
	if !ok {
		writeHealth(w, http.StatusServiceUnavailable, map[string]any{"status": "degraded", "checks": checks})
		return
	}
	writeHealth(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}

func writeHealth(w http.ResponseWriter, code int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
