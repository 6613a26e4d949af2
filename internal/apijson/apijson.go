// Package apijson writes the JSON answers of buzz's HTTP APIs on community
// hosts: a value, or an error {"error": code, "message": msg} whose message
// is a NIP-01 prefixed sentence. The relay and the features mounted on it
// answer alike through it.
package apijson

import (
	"encoding/json"
	"net/http"
	"strings"
)

// MsgInternal is the message of every 500 answer: details go to the log,
// never to the client.
const MsgInternal = "error: internal server error"

// Write answers status with v as JSON; a v that cannot be encoded answers
// 500 instead.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"error","message":"`+MsgInternal+`"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Error answers status with {"error": code, "message": msg}.
func Error(w http.ResponseWriter, status int, code, msg string) {
	Write(w, status, map[string]string{"error": code, "message": msg})
}

// Refusal answers a NIP-01 prefixed reason with the status its prefix maps
// to (Status) and the prefix, without its colon, as the code.
func Refusal(w http.ResponseWriter, reason string) {
	code, _, _ := strings.Cut(reason, ":")
	Error(w, Status(reason), code, reason)
}

// Status maps a NIP-01 prefixed message to an HTTP status: invalid and pow
// 400, restricted and blocked 403, auth-required 401, rate-limited 429,
// duplicate 200, anything else 500.
func Status(msg string) int {
	switch {
	case strings.HasPrefix(msg, "invalid:"), strings.HasPrefix(msg, "pow:"):
		return http.StatusBadRequest
	case strings.HasPrefix(msg, "restricted:"), strings.HasPrefix(msg, "blocked:"):
		return http.StatusForbidden
	case strings.HasPrefix(msg, "auth-required:"):
		return http.StatusUnauthorized
	case strings.HasPrefix(msg, "rate-limited:"):
		return http.StatusTooManyRequests
	case strings.HasPrefix(msg, "duplicate:"):
		return http.StatusOK
	case strings.HasPrefix(msg, "conflict:"): // a stale compare-and-swap (NIP-PC)
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}
