package httpd

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
)

// hosts is the set of Host headers the listener answers to. A page on another site that
// makes its own name resolve to this machine (DNS rebinding) can reach the listener, but
// its requests carry that name as their Host; refusing every name tunebot was not told of
// keeps such a page from reading /healthz, /metrics or the page's JSON.
type hosts struct {
	public string // public_url's host[:port], lower case; "" when none
	scheme string // public_url's scheme, for its default port

	mu     sync.Mutex
	listen string // the bound address, host:port (set by Listen)
	port   string
	wild   bool // listening on every interface (0.0.0.0, ::)
	self   string
}

func newHosts(cfg Config) *hosts {
	h := &hosts{}
	if u, err := url.Parse(cfg.PublicURL); err == nil && cfg.PublicURL != "" {
		h.public, h.scheme = strings.ToLower(u.Host), u.Scheme
	}
	if name, err := os.Hostname(); err == nil {
		h.self = strings.ToLower(name)
	}
	return h
}

// bound records the address the listener got (a configured port 0 becomes a real one).
func (h *hosts) bound(addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	ip := net.ParseIP(host)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listen, h.port = strings.ToLower(addr), port
	h.wild = host == "" || ip != nil && ip.IsUnspecified()
}

// allows reports whether a request with Host header host is for this listener: the public
// URL's host, the listen address, a loopback name or address on any port (an SSH tunnel may
// use another local port), and, when the listener is not on loopback alone, an IP address
// or this machine's name on the listen port (a browser sends an IP as Host only when it was
// pointed at that IP, which rebinding cannot fake).
func (h *hosts) allows(host string) bool {
	host = strings.ToLower(host)
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = strings.Trim(host, "[]"), ""
	}
	if h.public != "" && (host == h.public || port == defaultPort(h.scheme) && name == h.public) {
		return true
	}
	ip := net.ParseIP(name)
	if name == "localhost" || ip != nil && ip.IsLoopback() {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if host == h.listen {
		return true
	}
	if port != h.port {
		return false
	}
	remote := h.wild || !isLoopbackAddr(h.listen)
	return remote && (ip != nil || name == h.self && h.self != "")
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// guard answers 421 Misdirected Request to a Host the listener is not for.
func (h *hosts) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.allows(r.Host) {
			http.Error(w, fmt.Sprintf("tunebot does not answer to the host %.80q: open it by the address in service.public_url, the listen address, or localhost", r.Host), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
