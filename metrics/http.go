package metrics

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Route label values of requests no ServeMux pattern matched.
const (
	RouteWebSocket = "(websocket)" // a WebSocket upgrade
	RouteOther     = "(unmatched)" // anything else without a pattern
)

// httpSeries are the HTTP request series (InstrumentHTTP).
type httpSeries struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPSeries() httpSeries {
	return httpSeries{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "buzz_http_requests_total",
			Help: "HTTP requests answered, by the ServeMux pattern that matched (route) and status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "buzz_http_request_duration_seconds",
			Help: "Time to answer an HTTP request, by route; WebSocket upgrades are not timed.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"route"}),
	}
}

// InstrumentHTTP returns next counted and timed in buzz_http_requests_total
// {route,code} and buzz_http_request_duration_seconds{route}. route is the
// pattern of the ServeMux that served the request (Request.Pattern, as the
// request reaches next), RouteWebSocket for an upgrade, RouteOther when no
// pattern matched: its values are the routes registered, never a path, so
// cardinality stays bounded. A WebSocket connection is counted once, with
// the upgrade's status (101), and not timed.
func (r *Recorder) InstrumentHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := r.cfg.now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			route := req.Pattern
			if route == "" {
				route = RouteOther
				if sw.hijacked || strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
					route = RouteWebSocket
				}
			}
			code := sw.code
			switch {
			case sw.hijacked:
				code = http.StatusSwitchingProtocols
			case code == 0:
				code = http.StatusOK
			}
			r.http.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
			if !sw.hijacked {
				r.http.duration.WithLabelValues(route).Observe(r.cfg.now().Sub(start).Seconds())
			}
		}()
		next.ServeHTTP(sw, req)
	})
}

// statusWriter remembers the status written and whether the connection
// was hijacked.
type statusWriter struct {
	http.ResponseWriter
	code     int
	hijacked bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.code == 0 {
			w.code = http.StatusOK
		}
		f.Flush()
	}
}

// Hijack implements http.Hijacker (WebSocket upgrades).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("metrics: the ResponseWriter cannot be hijacked")
	}
	c, rw, err := h.Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
