package httpd_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// otherAddress is one of this machine's addresses that is not loopback, "" when it has none.
func otherAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
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

// TestBackupAnswersThisMachineOnly: with allow_remote the backup, token and all, is refused
// to a peer on another machine and to a request a local proxy relayed; the tunebot command
// on this machine gets it, over loopback or this machine's own address.
func TestBackupAnswersThisMachineOnly(t *testing.T) {
	data := bytes.Repeat([]byte("page"), 1024)
	port := serve(t, httpd.Config{Addr: "0.0.0.0:0", AllowRemote: true}, func(s *httpd.Server) {
		s.Handle("GET "+httpd.BackupPath, httpd.BackupHandler(fakeBackuper{data: data}, "s3cret", nil))
	})
	auth := http.Header{"Authorization": {"Bearer s3cret"}}
	if got, body := call(t, http.MethodGet, "127.0.0.1:"+port, "", httpd.BackupPath, auth); got != http.StatusOK || body != string(data) {
		t.Fatalf("from loopback: %d, %d bytes", got, len(body))
	}
	var buf bytes.Buffer
	if err := httpd.FetchBackup(context.Background(), httpd.Config{Addr: "0.0.0.0:" + port, AllowRemote: true}, "s3cret", &buf); err != nil || buf.Len() != len(data) {
		t.Fatalf("tunebot backup: %v, %d bytes", err, buf.Len())
	}
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		h := auth.Clone()
		h.Set(k, "203.0.113.9")
		if got, body := call(t, http.MethodGet, "127.0.0.1:"+port, "", httpd.BackupPath, h); got != http.StatusForbidden || !strings.Contains(body, "relayed") {
			t.Errorf("relayed with %s: %d %q", k, got, body)
		}
	}
	// A peer on another machine: one socket cannot come from elsewhere here, so the request
	// is handed to the route as the listener would hand it one from 203.0.113.9.
	h := httpd.BackupHandler(fakeBackuper{data: data}, "s3cret", nil)
	req := httptest.NewRequest(http.MethodGet, httpd.BackupPath, nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	req.RemoteAddr = "203.0.113.9:40000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || strings.Contains(rec.Body.String(), "page") || !strings.Contains(rec.Body.String(), "203.0.113.9") {
		t.Errorf("from another machine: %d %q, want 403 and no copy", rec.Code, rec.Body.String())
	}
	if ip := otherAddress(t); ip != "" {
		if got, body := call(t, http.MethodGet, net.JoinHostPort(ip, port), "", httpd.BackupPath, auth); got != http.StatusOK || body != string(data) {
			t.Errorf("from this machine's own address %s: %d, %d bytes", ip, got, len(body))
		}
	}
}

// TestTokenRoutesAnswerThisMachineOnly: every route WithToken guards (tunebot prune's, not
// only the backup) is refused, token and all, to a peer on another machine and to a request
// a local proxy relayed; the tunebot command on this machine is served.
func TestTokenRoutesAnswerThisMachineOnly(t *testing.T) {
	h := httpd.WithToken("s3cret", "a prune", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "pruned")
	}))
	for _, tc := range []struct {
		peer, header string
		want         int
	}{
		{"127.0.0.1:40000", "", http.StatusOK},
		{"203.0.113.9:40000", "", http.StatusForbidden},
		{"127.0.0.1:40000", "X-Forwarded-For", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodPost, "/prune", nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		if tc.header != "" {
			req.Header.Set(tc.header, "203.0.113.9")
		}
		req.RemoteAddr = tc.peer
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want || (tc.want != http.StatusOK) == strings.Contains(rec.Body.String(), "pruned") {
			t.Errorf("from %s %s: %d %q, want %d", tc.peer, tc.header, rec.Code, rec.Body.String(), tc.want)
		}
	}
}
