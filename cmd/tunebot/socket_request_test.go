package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tunebot/preset"
)

// A request body past the socket's limit is refused with a message that says so, not
// with the JSON decoder's "unexpected EOF" of a cut-off body.
func TestSocketRequestOverTheLimitIsNamed(t *testing.T) {
	big := `{"options":{},"by":{"name":"` + strings.Repeat("x", socketRequestLimit) + `"}}`
	for name, h := range map[string]http.Handler{
		"prune": pruneHandler(nil, nil),
		"apply": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req applyRequest
			if decodeSocketRequest(w, r, "an apply request", &req) {
				t.Error("an oversized apply request was decoded")
			}
		}),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(big)))
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "over 65536 bytes") {
			t.Errorf("%s: got %d %q, want 413 naming the 65536-byte limit", name, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	pruneHandler(nil, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{")))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not a prune request") {
		t.Errorf("a cut-off body: got %d %q", rec.Code, rec.Body.String())
	}
}

// A preset file past the import's limit is refused through the socket as too large, before
// anything is parsed or the store is touched (this daemon has none).
func TestPresetImportOverTheLimitIsNamed(t *testing.T) {
	d := &daemon{log: slog.New(slog.DiscardHandler)}
	rec := httptest.NewRecorder()
	body := strings.NewReader(strings.Repeat(" ", preset.MaxImportBytes+1))
	d.presetImport().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/presets/p1", body))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "over 65536 bytes") {
		t.Errorf("got %d %q, want 400 naming the 65536-byte limit", rec.Code, rec.Body.String())
	}
}
