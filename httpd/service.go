package httpd

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// WithToken serves h only to the tunebot command on this machine (LocalOnly) with token as
// its bearer token; others are told that what needs the token of this daemon's data dir.
// The daemon keeps the token in a file only its user can read, so what it guards (a copy
// of the data file, a prune) is for nobody who could not read the data file itself; with
// service.allow_remote, or behind a proxy, the token alone would be the only guard.
func WithToken(token, what string, h http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, what+" needs the token of this daemon's data dir", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// Call makes a request with token to the running daemon's service at path, as configured by
// cfg, on loopback when it listens everywhere. Any answer but 200 is an error that quotes it.
func Call(ctx context.Context, cfg Config, method, path, token string, body io.Reader) (*http.Response, error) {
	if cfg.Off() {
		return nil, errors.New("its service is off (service.addr: off)")
	}
	if _, _, err := net.SplitHostPort(cfg.addr()); err != nil {
		return nil, fmt.Errorf("service address %q: %w", cfg.addr(), err)
	}
	url := cfg.BaseURL() + path
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the daemon at %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("the daemon at %s refused: %s %s", url, resp.Status, msg)
	}
	return resp, nil
}
