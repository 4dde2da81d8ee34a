package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// socketRequestLimit bounds the JSON body of a request on the tunebot command's socket
// (prune, apply): a few options and operands, far under it.
const socketRequestLimit = 64 << 10

// decodeSocketRequest reads r's JSON body into v through the size limit, or answers a
// refusal that names the problem (what is the request's kind, e.g. "a prune request") and
// reports false.
func decodeSocketRequest(w http.ResponseWriter, r *http.Request, what string, v any) bool {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, socketRequestLimit)).Decode(v)
	if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
		http.Error(w, fmt.Sprintf("not %s: the body is over %d bytes", what, socketRequestLimit), http.StatusRequestEntityTooLarge)
		return false
	}
	if err != nil {
		http.Error(w, "not "+what+": "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}
