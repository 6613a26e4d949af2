// Package apijson writes the JSON answers of buzz's HTTP APIs on community
// hosts: a value, or an error {"error": code, "message": msg} whose message
// is a NIP-01 prefixed sentence. The relay and the features mounted on it
// answer alike through it.
package apijson

import (
	"encoding/json"
	"net/http"
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
