package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tunebot/bot"
	"tunebot/config"
	"tunebot/dashboard"
	"tunebot/httpd"
	"tunebot/secret"
	"tunebot/session"
)

func init() {
	register("dashboard", "dashboard link|rotate --config FILE: a one-time sign-in link to the running daemon's monitoring page, or sign everyone out of it", runDashboard)
}

// dashboardKeyFile is the monitoring page's signing key in the data directory.
const dashboardKeyFile = "dashboard.key"

// operatorGrant lets the operator's sign-in (tunebot dashboard link, which needs the data
// directory's key) do what the console may: everything.
var operatorGrant = bot.Grant{Platform: dashboard.Operator.Platform, Users: []string{dashboard.Operator.ID}}

// mountDashboard serves the monitoring page on the service listener (docs/design.md §6).
func (d *daemon) mountDashboard(srv *httpd.Server, allow bot.AllowList) error {
	key, err := dashboard.LoadKey(filepath.Join(d.app.cfg.DataDir, dashboardKeyFile))
	if err != nil {
		return err
	}
	dash, err := dashboard.New(dashboard.Options{Store: d.app.db, Actions: d.handler, Allow: allow, Space: d.cfg.NamesSpace(), SpaceOf: d.cfg.SpaceOf,
		Key: key, KeyPath: filepath.Join(d.app.cfg.DataDir, dashboardKeyFile), Roles: d.roles,
		PublicURL: d.cfg.Service.PublicURL, BaseURL: d.cfg.Service.BaseURL(), Logger: d.log.With("component", "dashboard"),
		Clips: d.app.clipFiles(), Redact: secret.Process()})
	if err != nil {
		return err
	}
	srv.Mount(dash)
	d.dash = dash
	return nil
}

// dashboardLink is /tune dashboard: a link for the person who asked.
func (d *daemon) dashboardLink(who session.Actor) (string, time.Time, error) {
	if d.dash == nil {
		return "", time.Time{}, session.Userf(nil, "the monitoring page is not running (service.addr: off, or tunebot is still starting)")
	}
	return d.dash.Link(dashboard.Identity{Platform: who.Platform, ID: who.ID, Name: who.Name})
}

// roles is what the page checks the allow-list with at each request: the roles user holds
// on platform now, as its chat adapter reads them (the operator and the console hold none).
func (d *daemon) roles(ctx context.Context, platform, user string) []string {
	for _, ad := range d.adapters {
		if ad.Platform() == platform {
			return ad.Roles(ctx, user)
		}
	}
	return nil
}

// trialURL links trial reports to the page when it has a public address.
func (d *daemon) trialURL() func(string, int, int) string {
	base := strings.TrimRight(d.cfg.Service.PublicURL, "/")
	if base == "" || d.cfg.Service.Off() {
		return nil
	}
	return func(id string, n, r int) string { return base + dashboard.TrialPath(id, n, r) }
}

func runDashboard(ctx context.Context, e *env, args []string) int {
	const usage = `usage: tunebot dashboard link|rotate --config FILE

link asks the running daemon for a one-time sign-in link to its monitoring page, as the
operator. rotate signs everyone out of the page: a new dashboard.key, so every cookie and
every unused sign-in link stops working (the running daemon uses it at once).`
	sub, code, ok := subcommand(e, "dashboard", usage, []string{"link", "rotate"}, args)
	if !ok {
		return code
	}
	fs := flagSet(e, "dashboard "+sub, usage)
	cfgPath := fs.String("config", "", "the config file tunebot run uses")
	cfg, code, ok := parseConfigFlags(e, fs, args[1:], cfgPath)
	if !ok {
		return code
	}
	if sub == "rotate" {
		msg, err := rotateDashboardKey(ctx, cfg, nil)
		if err != nil {
			fmt.Fprintln(e.stderr, "dashboard rotate:", err)
			return 1
		}
		fmt.Fprintln(e.stdout, msg)
		return 0
	}
	link, err := operatorLink(ctx, cfg, *cfgPath, nil)
	if err != nil {
		fmt.Fprintln(e.stderr, "dashboard link:", err)
		return 1
	}
	fmt.Fprintln(e.stdout, link)
	fmt.Fprintf(e.stderr, "works once, for %v; it signs in as the operator. Through an SSH tunnel, open it as http://localhost:PORT/… with the tunnel's port.\n", dashboard.LinkTTL)
	return 0
}

// errNoPage is askDaemon's error when what answers on the socket has no such route: a
// foreground tune, which serves the presets and apply there but no monitoring page.
var errNoPage = errors.New("what answers serves no monitoring page")

// askDaemon posts to path on the running daemon's socket as the operator (proof of reading
// the data directory's key) and decodes its JSON answer into out; no daemon listening is
// httpd.ErrNoDaemon.
func askDaemon(ctx context.Context, cfg config.Config, client *http.Client, path string, out any) error {
	keyPath := filepath.Join(cfg.DataDir, dashboardKeyFile)
	key, err := dashboard.ReadKey(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		// tunebot run makes the key when it starts: none has run with this data_dir.
		return fmt.Errorf("%w: no %s in %s", httpd.ErrNoDaemon, dashboardKeyFile, cfg.DataDir)
	}
	if err != nil {
		return err
	}
	if client == nil {
		client = httpd.SocketClient(socketPath(cfg), 10*time.Second)
	}
	base := socketPath(cfg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, httpd.SocketURL(path), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+dashboard.OperatorToken(key))
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("asking the daemon: %w", err)
	}
	defer resp.Body.Close()
	var refusal struct {
		Error string `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(raw, &refusal)
	if resp.StatusCode == http.StatusNotFound && refusal.Error == "" {
		return fmt.Errorf("%w on %s", errNoPage, base)
	}
	if resp.StatusCode != http.StatusOK {
		if refusal.Error == "" {
			refusal.Error = resp.Status + " " + strings.TrimSpace(string(raw))
		}
		return fmt.Errorf("the daemon on %s refused: %s", base, refusal.Error)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the daemon on %s answered %q: %w", base, bot.Truncate(string(raw), 200), err)
	}
	return nil
}

// operatorLink asks the running daemon, on its socket, for a link: the daemon
// holds the store, and proof of reading the data directory's key stands for the operator.
// cfgPath is the config file the daemon is to run with, for the line that says how to
// start one when none runs.
func operatorLink(ctx context.Context, cfg config.Config, cfgPath string, client *http.Client) (string, error) {
	if cfg.Service.Off() {
		return "", fmt.Errorf("the monitoring page is off (service.addr: off in the config)")
	}
	var out struct {
		URL string `json:"url"`
	}
	start := "tunebot run"
	if cfgPath != "" {
		start += " --config " + shellWord(cfgPath)
	}
	switch err := askDaemon(ctx, cfg, client, "/api/link", &out); {
	case errors.Is(err, httpd.ErrNoDaemon):
		return "", fmt.Errorf("no tunebot daemon is running with data_dir %s, so no monitoring page is served: start it with %s, then ask for the link again", cfg.DataDir, start)
	case errors.Is(err, errNoPage):
		return "", fmt.Errorf("a foreground tune runs with data_dir %s, and it serves no monitoring page: once it has ended, start the daemon with %s, then ask for the link again", cfg.DataDir, start)
	case err != nil:
		return "", err
	}
	if out.URL == "" {
		return "", fmt.Errorf("the daemon on %s gave no link", socketPath(cfg))
	}
	return out.URL, nil
}

// rotateDashboardKey signs everyone out of the monitoring page: the running daemon makes a
// new key and uses it at once; with no daemon answering, the key file is replaced, which
// the next start reads.
func rotateDashboardKey(ctx context.Context, cfg config.Config, client *http.Client) (string, error) {
	path := filepath.Join(cfg.DataDir, dashboardKeyFile)
	done := "signed everyone out of the monitoring page: " + path + " holds a new key, so every cookie and every unused sign-in link stopped working"
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "no " + path + ": the monitoring page never ran with this data_dir, so nobody is signed in", nil
	}
	if !cfg.Service.Off() {
		var out struct {
			OK bool `json:"ok"`
		}
		err := askDaemon(ctx, cfg, client, "/api/rotate", &out)
		if err == nil {
			return done, nil
		}
		if !errors.Is(err, httpd.ErrNoDaemon) && !errors.Is(err, errNoPage) {
			return "", err
		}
	}
	// No daemon serves the page, so no process holds the old key: replacing the file is all.
	if _, err := dashboard.RotateKey(path); err != nil {
		return "", err
	}
	return done + " (no daemon was running; the next tunebot run uses it)", nil
}
