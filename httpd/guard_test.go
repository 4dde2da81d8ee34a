package httpd_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"tunebot/httpd"
)

// serve runs a Server for cfg until the test ends and returns its bound port.
func serve(t *testing.T, cfg httpd.Config, setup func(*httpd.Server)) string {
	t.Helper()
	srv, err := httpd.New(cfg, fakeSource{snap: sample()}, "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// call sends method path to addr with the Host header host (the address's own when "")
// and extra headers; it returns the status and body.
func call(t *testing.T, method, addr, host, path string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// TestHostHeaderIsChecked: a request whose Host is a name tunebot was not told of (a page
// on another site that rebinds its name to this machine) gets 421 on every path, the
// metrics included; the listen address, loopback on any port (an SSH tunnel) and the
// public URL's host are served.
func TestHostHeaderIsChecked(t *testing.T) {
	port := serve(t, httpd.Config{Addr: "127.0.0.1:0", PublicURL: "https://tune.example.com"}, func(s *httpd.Server) {
		s.Mount(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "page") }))
	})
	addr := "127.0.0.1:" + port
	for _, tc := range []struct {
		host string
		want int
	}{
		{"rebind.evil.example:" + port, http.StatusMisdirectedRequest},
		{"rebind.evil.example", http.StatusMisdirectedRequest},
		{"tune.example.com.evil.example", http.StatusMisdirectedRequest},
		{"192.0.2.77:" + port, http.StatusMisdirectedRequest}, // an address this listener is not on
		{addr, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"localhost:8080", http.StatusOK}, // a tunnel's other local port
		{"[::1]:" + port, http.StatusOK},
		{"tune.example.com", http.StatusOK},
		{"TUNE.example.com:443", http.StatusOK},
	} {
		for _, path := range []string{"/healthz", "/metrics", "/sessions"} {
			got, body := call(t, http.MethodGet, addr, tc.host, path, nil)
			if got != tc.want {
				t.Errorf("Host %s %s: %d, want %d (%s)", tc.host, path, got, tc.want, body)
			}
			if got == http.StatusMisdirectedRequest && !strings.Contains(body, "public_url") {
				t.Errorf("Host %s: the refusal does not say what to use: %s", tc.host, body)
			}
		}
	}
}

// TestHostHeaderOnEveryInterface: listening everywhere (allow_remote), an IP address or this
// machine's name on the listen port is served, another name is not.
func TestHostHeaderOnEveryInterface(t *testing.T) {
	port := serve(t, httpd.Config{Addr: "0.0.0.0:0", AllowRemote: true}, nil)
	addr := "127.0.0.1:" + port
	self, _ := os.Hostname()
	for host, want := range map[string]int{
		"192.0.2.77:" + port:          http.StatusOK,
		self + ":" + port:             http.StatusOK,
		"rebind.evil.example:" + port: http.StatusMisdirectedRequest,
		"192.0.2.77:1":                http.StatusMisdirectedRequest,
	} {
		if got, body := call(t, http.MethodGet, addr, host, "/healthz", nil); got != want {
			t.Errorf("Host %s: %d, want %d (%s)", host, got, want, body)
		}
	}
}
