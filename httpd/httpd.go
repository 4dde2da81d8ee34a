// Package httpd is the daemon's local HTTP listener: it serves tunebot's /healthz and
// /metrics (Prometheus text exposition format, written by hand) on a local address, so a
// GPU machine's monitoring sees the daemon's state without a client library or an open
// port, and the daemon mounts on it the monitoring page of dashboard/ (Mount). The routes of
// the tunebot command on this machine (the backup download, BackupHandler, and the others)
// are served on a Unix socket in the data directory instead (Local), never on this listener.
//
// It is not the systemd unit that runs tunebot as a service: that lives in deploy/.
package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"tunebot/session"
)

// DefaultAddr is where the service listens unless configured: loopback only.
const DefaultAddr = "127.0.0.1:9464"

// Config is the service section of tunebot's configuration.
type Config struct {
	// Addr is host:port to listen on (default 127.0.0.1:9464); "off" disables the service.
	Addr string `yaml:"addr"`
	// AllowRemote permits a non-loopback Addr. The endpoints have no authentication and
	// show session activity, so this is for a host behind a firewall or a proxy.
	AllowRemote bool `yaml:"allow_remote"`
	// PublicURL is where people reach the monitoring page (a TLS reverse proxy, e.g.
	// https://tune.example.com); sign-in links and trial reports in chat use it. Empty:
	// links name the listener's own address, for an SSH tunnel.
	PublicURL string `yaml:"public_url"`
}

// BaseURL is the listener's address as a URL, for links when there is no PublicURL; a
// wildcard host becomes loopback.
func (c Config) BaseURL() string {
	host, port, err := net.SplitHostPort(c.addr())
	if err != nil {
		return "http://" + DefaultAddr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Enabled reports whether the service should run.
func (c Config) Enabled() bool { return c.Addr != "off" }

func (c Config) addr() string {
	if c.Addr == "" {
		return DefaultAddr
	}
	return c.Addr
}

// Off reports whether the service is disabled (addr "off").
func (c Config) Off() bool { return c.Addr == "off" }

// Check validates the configuration: "off", or a usable address.
func (c Config) Check() error {
	if c.Off() {
		return nil
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.Trim(u.Path, "/") != "" {
			return fmt.Errorf("service.public_url %q must be an http(s) address like https://tune.example.com, without path, query, fragment or credentials (the page is served at the root)", c.PublicURL)
		}
	}
	return CheckAddr(c.addr(), c.AllowRemote)
}

// CheckAddr refuses an address that is not host:port, and a host that is not loopback
// unless allowRemote: /metrics and /healthz have no authentication.
func CheckAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("service.addr: %q must be host:port, e.g. %s", addr, DefaultAddr)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	shown := host
	if host == "" {
		shown = "every interface"
	}
	return fmt.Errorf("service.addr: %q listens on %s, not loopback: /healthz and /metrics have no authentication and show session activity; "+
		"use 127.0.0.1 (scrape through a local agent or a proxy) or set service.allow_remote: true behind a firewall", addr, shown)
}

// Summary is a Prometheus summary without quantiles: how many and their total.
type Summary struct {
	Count int
	Sum   float64
}

// Snapshot is everything /metrics and /healthz report, read at one time.
type Snapshot struct {
	Sessions map[session.State]int
	Trials   map[session.TrialState]int
	// TrialDurations by rung: wall time from start to end of finished trials (training
	// and evaluation).
	TrialDurations map[int]Summary
	OutboxDepth    int
	// AdvisorCalls by outcome: ok, invalid, cancelled, error.
	AdvisorCalls map[string]int
	// AdvisorTokens by kind: prompt, completion, prompt_cache_hit, prompt_cache_miss.
	AdvisorTokens map[string]int64
	GPUSeconds    float64
	// Disks are the free and total bytes of the filesystems tunebot writes to.
	Disks []session.DiskUsage
}

// Active is the number of sessions holding or waiting for the GPU slot.
func (s Snapshot) Active() int {
	n := 0
	for st, c := range s.Sessions {
		if st.Active() {
			n += c
		}
	}
	return n
}

// Source reads a Snapshot. An error means the store cannot be read: /healthz answers 503.
type Source interface {
	Snapshot(ctx context.Context) (Snapshot, error)
}

// Handler serves /healthz and /metrics from src.
func Handler(src Source, version string, logger *slog.Logger) http.Handler {
	return newMux(src, version, logger)
}

func newMux(src Source, version string, logger *slog.Logger) *http.ServeMux {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{src: src, version: version, log: logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", h.health)
	mux.HandleFunc("GET /metrics", h.metrics)
	return mux
}

type handler struct {
	src     Source
	version string
	log     *slog.Logger
}

// snapshotTimeout bounds a scrape: a store stuck behind a long write must not pile up
// scrapes.
const snapshotTimeout = 5 * time.Second

func (h *handler) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	body := map[string]any{"version": h.version}
	status := http.StatusOK
	snap, err := h.src.Snapshot(ctx)
	if err != nil {
		h.log.Warn("health check failed", "error", err)
		status = http.StatusServiceUnavailable
		body["status"], body["store"] = "unhealthy", "error: "+err.Error()
	} else {
		body["status"], body["store"] = "ok", "ok"
		body["sessions_active"] = snap.Active()
		body["outbox_depth"] = snap.OutboxDepth
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	snap, err := h.src.Snapshot(ctx)
	if err != nil {
		h.log.Warn("metrics scrape failed", "error", err)
		http.Error(w, "reading tunebot's store failed", http.StatusServiceUnavailable)
		return
	}
	var b strings.Builder
	writeMetrics(&b, snap, h.version)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// Server runs the handler on the configured address.
type Server struct {
	addr string
	srv  *http.Server
	log  *slog.Logger
	page http.Handler // Mount's: every path but /healthz and /metrics
	host *hosts       // the Host headers it answers to
}

// Mount serves h (the monitoring page) for every path the service does not; call it
// before Serve.
func (s *Server) Mount(h http.Handler) { s.page = h }

// New checks cfg and returns a Server for src.
func New(cfg Config, src Source, version string, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	addr := cfg.addr()
	if err := CheckAddr(addr, cfg.AllowRemote); err != nil {
		return nil, err
	}
	s := &Server{addr: addr, log: logger, host: newHosts(cfg)}
	mux := newMux(src, version, logger)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.page == nil {
			http.NotFound(w, r)
			return
		}
		s.page.ServeHTTP(w, r)
	})
	// Two minutes: a policy download is larger than a scrape.
	s.srv = &http.Server{Handler: s.host.guard(mux), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 2 * time.Minute}
	return s, nil
}

// Listen binds the address, so a port in use is an error at start-up, not later.
func (s *Server) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("service: listening on %s: %w", s.addr, err)
	}
	return ln, nil
}

// Serve serves on ln until ctx ends, then shuts down within a few seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.host.bound(ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	s.log.Info("service listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("service: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("service: shutting down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("service: %w", err)
	}
	return nil
}

var goVersion = runtime.Version()
