package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"tunebot/bot"
	"tunebot/dashboard"
	"tunebot/httpd"
	"tunebot/session"
)

func init() {
	register("dashboard", "dashboard link --config FILE: a one-time sign-in link to the running daemon's monitoring page", runDashboard)
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
	dash, err := dashboard.New(dashboard.Options{Store: d.app.db, Actions: d.handler, Allow: allow, Space: d.cfg.space(), Key: key,
		PublicURL: d.cfg.Service.PublicURL, BaseURL: d.cfg.Service.BaseURL(), Logger: d.log.With("component", "dashboard"),
		Clips: d.app.clips()})
	if err != nil {
		return err
	}
	srv.Mount(dash)
	d.dash = dash
	return nil
}

// dashboardLink is /tune dashboard: a link for the person who asked.
func (d *daemon) dashboardLink(who session.Actor, roles []string) (string, time.Time, error) {
	if d.dash == nil {
		return "", time.Time{}, session.Userf(nil, "the monitoring page is not running (service.addr: off, or tunebot is still starting)")
	}
	return d.dash.Link(dashboard.Identity{Platform: who.Platform, ID: who.ID, Name: who.Name, Roles: roles})
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
	if len(args) == 0 || args[0] != "link" {
		fmt.Fprintln(e.stderr, "usage: tunebot dashboard link --config FILE")
		return 2
	}
	fs := flag.NewFlagSet("dashboard link", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	cfgPath := fs.String("config", "", "the config file tunebot run uses")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cfg, err := loadConfig(*cfgPath, e.getenv)
	if err != nil {
		printProblems(e, err)
		return 1
	}
	link, err := operatorLink(ctx, cfg, nil)
	if err != nil {
		fmt.Fprintln(e.stderr, "dashboard link:", err)
		return 1
	}
	fmt.Fprintln(e.stdout, link)
	fmt.Fprintf(e.stderr, "works once, for %v; it signs in as the operator. Through an SSH tunnel, open it as http://localhost:PORT/… with the tunnel's port.\n", dashboard.LinkTTL)
	return 0
}

// operatorLink asks the running daemon, on its loopback listener, for a link: the daemon
// holds the store, and proof of reading the data directory's key stands for the operator.
func operatorLink(ctx context.Context, cfg Config, client *http.Client) (string, error) {
	if cfg.Service.Off() {
		return "", fmt.Errorf("the monitoring page is off (service.addr: off in the config)")
	}
	key, err := dashboard.ReadKey(filepath.Join(cfg.DataDir, dashboardKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no %s in %s: tunebot run makes it when it starts with this config; is it running?", dashboardKeyFile, cfg.DataDir)
	}
	if err != nil {
		return "", err
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	base := cfg.Service.BaseURL()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/link", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+dashboard.OperatorToken(key))
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("no tunebot run answers on %s (service.addr): %w", base, err)
	}
	defer resp.Body.Close()
	var out struct {
		URL   string `json:"url"`
		Error string `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode != http.StatusOK || out.URL == "" {
		if out.Error == "" {
			out.Error = resp.Status
		}
		return "", fmt.Errorf("the daemon on %s refused: %s", base, out.Error)
	}
	return out.URL, nil
}
