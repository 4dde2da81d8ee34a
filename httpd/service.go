package httpd

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
)

// WithToken serves h only with token as its bearer token; others are told that what needs
// the token of this daemon's data dir. It guards the routes of the daemon's socket (Local),
// which only its user can reach: the token, in a file only that user can read, is a second
// wall behind the socket's mode.
func WithToken(token, what string, h http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, what+" needs the token of this daemon's data dir", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Call makes a request with token to the running daemon on its socket at path. Any
// answer but 200 is an error that quotes it; no daemon listening is ErrNoDaemon.
func Call(ctx context.Context, socket, method, path, token string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, SocketURL(path), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := SocketClient(socket, 0).Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the daemon: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("the daemon on %s refused: %s %s", socket, resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}
