package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"tunebot/config"
	"tunebot/dashboard"
	"tunebot/dashboard/browsertest"
	"tunebot/httpd"
)

// freeAddr is a loopback address no one listens on (the config must name the port, since
// `tunebot dashboard link` reads it from there).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// dashboardLink runs `tunebot dashboard link` and returns the link it prints.
func dashboardLink(t *testing.T, cfg string) string {
	t.Helper()
	out, err := exec.Command(tunebotBin, "dashboard", "link", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("dashboard link: %v %s", err, out)
	}
	link := strings.TrimSpace(string(out))
	if !strings.Contains(link, "/signin?token=") {
		t.Fatalf("dashboard link printed %q", link)
	}
	return link
}

// With no daemon running, link says so and what to start, whether the page's key exists
// (a daemon ran before) or not; never the socket's internal URL (issue 43, item 7.7).
func TestDashboardLinkWithoutADaemon(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		dir := t.TempDir()
		cfgPath := writeConfig(t, dir, fmt.Sprintf("data_dir: data\nservice: {addr: %q}\n", freeAddr(t)))
		cfg, err := config.Load(cfgPath, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if keyed {
			if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if _, err := dashboard.LoadKey(filepath.Join(cfg.DataDir, dashboardKeyFile)); err != nil {
				t.Fatal(err)
			}
		}
		_, err = operatorLink(context.Background(), cfg, cfgPath, nil)
		want := "no tunebot daemon is running with data_dir " + cfg.DataDir + ", so no monitoring page is served: start it with tunebot run --config " + cfgPath + ", then ask for the link again"
		if err == nil || err.Error() != want {
			t.Errorf("key there %v: %v, want %q", keyed, err, want)
		}
	}
}

// With a foreground tune on the socket, which serves no monitoring page (its routes have no
// /api/link), link says so and what to start once it ends, and rotate replaces the key
// file, as no process serves the page with the old key.
func TestDashboardLinkBesideAForegroundTune(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf("data_dir: data\nservice: {addr: %q}\n", freeAddr(t)))
	cfg, err := config.Load(cfgPath, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(cfg.DataDir, dashboardKeyFile)
	if _, err := dashboard.LoadKey(keyPath); err != nil {
		t.Fatal(err)
	}
	l := httpd.NewLocal(socketPath(cfg), slog.New(slog.DiscardHandler))
	l.Handle("POST "+prunePath, http.NotFoundHandler()) // a route of tune's, not the page's
	ln, err := l.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = l.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })

	_, err = operatorLink(context.Background(), cfg, cfgPath, nil)
	want := "a foreground tune runs with data_dir " + cfg.DataDir + ", and it serves no monitoring page: once it has ended, start the daemon with tunebot run --config " + cfgPath + ", then ask for the link again"
	if err == nil || err.Error() != want {
		t.Errorf("link: %v, want %q", err, want)
	}
	if msg, err := rotateDashboardKey(context.Background(), cfg, nil); err != nil || !strings.Contains(msg, "no daemon was running") {
		t.Errorf("rotate: %q, %v; want the key file replaced", msg, err)
	}
}

// TestDashboardLinkCommand: the operator's link, asked of the running daemon over its
// loopback listener, signs in once; without a daemon the command says why.
func TestDashboardLinkCommand(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: data\nservice: {addr: %q}\n", addr))
	out, err := exec.Command(tunebotBin, "dashboard", "link", "--config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no tunebot daemon is running") {
		t.Fatalf("without a daemon: %v %s", err, out)
	}
	startDaemon(t, cfg)
	log := logFile(filepath.Join(dir, "data")) // the console is the front end: the log is the file
	link := dashboardLink(t, cfg)
	u, _ := url.Parse(link)
	if u.Host != addr {
		t.Errorf("link %s is not on the listener %s", link, addr)
	}
	resp := postSignIn(t, link)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in: %d %v", resp.StatusCode, resp.Cookies())
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/me", nil)
	req.AddCookie(resp.Cookies()[0])
	me, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Platform string          `json:"platform"`
		May      map[string]bool `json:"may"`
	}
	_ = json.NewDecoder(me.Body).Decode(&v)
	me.Body.Close()
	if v.Platform != "dashboard" || !v.May["decide"] || !v.May["start"] {
		t.Errorf("the operator is %+v; want every permission, on the page's platform", v)
	}
	// A session the operator starts from the page is logged as the page's, not the shell's
	// (issue 20, item 15).
	start, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/start", strings.NewReader(`{"args": "trials=4 rungs=20,40,60 fallback=true"}`))
	start.Header.Set("Content-Type", "application/json")
	start.Header.Set("Origin", "http://"+addr)
	start.AddCookie(resp.Cookies()[0])
	started, err := http.DefaultClient.Do(start)
	if err != nil {
		t.Fatal(err)
	}
	started.Body.Close()
	if started.StatusCode != http.StatusOK {
		t.Fatalf("start from the page: %d", started.StatusCode)
	}
	waitFor(t, "the start in the log", 10*time.Second, func() bool { return strings.Contains(log.String(), `msg="session started"`) })
	line := grepLines(log.String(), `msg="session started"`)
	if !strings.Contains(line, "user=operator") || !strings.Contains(line, "platform=dashboard") || strings.Contains(line, "platform=cli") {
		t.Errorf("the page's start is logged as %q; want user=operator platform=dashboard", line)
	}
	if again := postSignIn(t, link); again.StatusCode != http.StatusUnauthorized {
		t.Errorf("a link used twice: %d", again.StatusCode)
	}
	if info, err := os.Stat(filepath.Join(dir, "data", dashboardKeyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", info, err)
	}
}

// TestDashboardInChromium drives the page in a real headless Chromium against a daemon
// running a sim session in approval mode: sign in through the operator's link, see the
// session, approve its proposal from the page and see the session go on, overlay two
// trials' curves. Screenshots go to $TUNEBOT_ARTIFACTS (else the test's temp dir).
func TestDashboardInChromium(t *testing.T) {
	chromium, shots := needChromium(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: data\nservice: {addr: %q}\n", addr))
	_, stdin, _ := startDaemon(t, cfg)
	link := dashboardLink(t, cfg)
	base := "http://" + addr

	b := startBrowser(t, chromium)
	b.navigate(base + "/")
	b.waitJS("the sign-in hint", `!!document.querySelector("#signin-hint")`)
	if n := b.evalString(`String(document.querySelectorAll("#sessions").length)`); n != "0" {
		t.Error("sessions shown without a sign-in")
	}
	b.screenshot(filepath.Join(shots, "0-not-signed-in.png"))
	b.navigate(link)
	b.waitJS("the sign-in button", `!!document.querySelector("#signin")`)
	b.screenshot(filepath.Join(shots, "1-signin.png"))
	b.eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`) // it navigates
	b.waitJS("the sessions page", `location.pathname === "/" && document.querySelector("#session-list").textContent.includes("No sessions yet")`)
	// A session started in chat appears without a reload.
	stdin.WriteString("/tune start mode=approval trials=4 rungs=20,40,60 fallback=true\n")
	b.waitJS("the new session", `!!document.querySelector("#sessions tbody tr")`)
	if loc := b.evalString(`location.href`); strings.Contains(loc, "token") || loc != base+"/" {
		t.Errorf("after sign-in the address is %s; want the clean %s/", loc, base)
	}
	if got := b.evalString(`document.cookie`); got != "" {
		t.Errorf("a script reads the cookie: %q", got)
	}
	if got := b.evalString(`JSON.stringify(localStorage) + JSON.stringify(sessionStorage)`); got != "{}{}" {
		t.Errorf("browser storage holds %s", got)
	}
	b.screenshot(filepath.Join(shots, "2-sessions.png"))
	href := b.evalString(`document.querySelector("#sessions tbody a").getAttribute("href")`)

	b.navigate(base + href)
	b.waitJS("the pending proposal", `!!document.querySelector("#approve") && document.body.dataset.state === "awaiting_approval"`)
	trials := b.evalString(`document.body.dataset.trials`)
	// The sampler's why: one sentence, its three strongest pieces of evidence, the rest
	// folded away until asked for.
	if got := b.evalString(`document.querySelector("#decide .summary").textContent`); !strings.HasPrefix(got, "Strengthens") && !strings.HasPrefix(got, "Weakens") &&
		!strings.HasPrefix(got, "Raises") && !strings.HasPrefix(got, "Lowers") && !strings.HasPrefix(got, "Switches") {
		t.Errorf("the proposal's summary %q does not say in words what moves", got)
	}
	// The sampler moves as many scalars as its model warrants (at most 4 here), so the
	// page folds the evidence away only when there are more than 3 pieces.
	var shown, folded int
	var open string
	got := b.evalString(`const all = document.querySelector("#decide details.all-evidence"); [document.querySelectorAll("#decide ul.evidence li").length, all ? all.querySelectorAll("li").length : 0, all ? all.open : "none"].join(" ")`)
	if _, err := fmt.Sscan(got, &shown, &folded, &open); err != nil {
		t.Fatalf("evidence %q: %v", got, err)
	}
	moved := b.evalString(`String(document.querySelectorAll("#decide table.diff tbody tr").length)`)
	switch {
	case shown == 0:
		t.Errorf("no evidence shown: %q", got)
	case folded > 3 && (shown != 3 || open != "false"):
		t.Errorf("evidence shown, folded, open: %q; want the 3 strongest shown and all %d in a closed block", got, folded)
	case folded == 0 && (shown > 3 || open != "none"):
		t.Errorf("evidence shown, folded, open: %q; want at most 3 shown and no block", got)
	case folded > 0 && folded <= 3:
		t.Errorf("evidence shown, folded, open: %q; a block of 3 or fewer pieces folds away nothing", got)
	}
	t.Logf("the proposal moves %s scalars; evidence shown, folded, open: %s", moved, got)
	// A bad edit is refused with the problem beside its line, as in the chat form.
	b.eval(`document.querySelector("#edit").closest("details").open = true; document.querySelector("#edit-0").value = "pose=99"; document.querySelector("#edit").click()`)
	b.waitJS("the edit's per-field error", `[...document.querySelectorAll(".field-error")].some((e) => e.textContent.includes("pose"))`)
	b.screenshot(filepath.Join(shots, "3-session-waiting.png"))
	b.eval(`document.querySelector("#approve").click()`)
	b.waitJS("the approval's answer", `(document.querySelector("#decide-msg")||{}).textContent.includes("approved by operator")`)
	// The session goes on by itself: a new trial appears without a reload.
	b.waitJS("the approved trial to appear", `document.body.dataset.trials !== "`+trials+`"`)
	b.screenshot(filepath.Join(shots, "4-session-continued.png"))
	if rows := b.evalString(`String(document.querySelectorAll("#leaderboard tbody tr").length)`); rows == "0" {
		t.Error("empty leaderboard")
	}
	// The leaderboard sorts by a column on a click, newest trial first for "trial".
	b.eval(`document.querySelector('#leaderboard th[data-key="number"]').click()`)
	first := b.evalString(`document.querySelector("#leaderboard tbody tr").dataset.trial`)
	b.eval(`document.querySelector('#leaderboard th[data-key="number"]').click()`)
	if again := b.evalString(`document.querySelector("#leaderboard tbody tr").dataset.trial`); first == again || again != "0@0" {
		t.Errorf("sorting by trial: first row %s, then %s; want the order reversed, trial 0 first", first, again)
	}
	// Every finished trial's row shows its clip's poster frame; a click plays the clip, which
	// keeps playing through the page's refreshes (issue 21).
	b.waitJS("the clips' poster frames", `(() => { const ps = [...document.querySelectorAll("#leaderboard img.clip-poster")];
		return ps.length >= 2 && ps.every((p) => p.complete && p.naturalWidth > 0) })()`)
	b.eval(`document.querySelector('#leaderboard tr[data-trial="0@0"] img.clip-poster').click()`)
	b.waitJS("the baseline's clip playing", `(() => { const p = document.querySelector('#leaderboard tr[data-trial="0@0"] .clip-player');
		return !!p && p.complete && p.naturalWidth > 0 })()`)
	time.Sleep(3500 * time.Millisecond) // a refresh of the page's data
	if n := b.evalString(`String(document.querySelectorAll('#leaderboard tr[data-trial="0@0"] .clip-player').length)`); n != "1" {
		t.Errorf("the playing clip is gone after a refresh (%s players)", n)
	}
	// The compare view: the best trial beside the baseline, played together, metrics beside.
	b.waitJS("two clips side by side", `(() => { const ps = [...document.querySelectorAll("#clips .clip-side .clip-player")];
		return ps.length === 2 && ps.every((p) => p.complete && p.naturalWidth > 0) })()`)
	// Read in one go, as a refresh may bring a new best between two reads. When the baseline
	// is the best (the sim's early trials may all score below it), it is shown beside another.
	sides, best, _ := strings.Cut(b.evalString(`[...document.querySelectorAll("#clips .clip-side")].map((s) => s.dataset.trial + ":" + s.querySelectorAll(".clip-metrics tr").length).join(" ")
		+ "|" + document.querySelector("#leaderboard tr.best").dataset.trial`), "|")
	if want := best + ":7 0@0:7"; sides != want && (best != "0@0" || !regexp.MustCompile(`^0@0:7 [1-9]\d*@\d:7$`).MatchString(sides)) {
		t.Errorf("compare view %q, want the best trial (%s) and the baseline (another trial when the baseline is the best) with their 7 metrics", sides, best)
	}
	// Each side's score says what it is against, as the leaderboard's (issue 43, item 7.11).
	if caps := b.evalString(`[...document.querySelectorAll("#clips .clip-metrics caption")].map((c) => c.textContent).join(" | ")`); !regexp.MustCompile(`^[+-]\d\.\d{3} vs baseline @ rung \d.* \| [+-]\d\.\d{3} vs baseline @ rung \d`).MatchString(caps) {
		t.Errorf("the compare view's scores say %q, want each against its baseline", caps)
	}
	b.eval(`document.querySelector("#play-both").click()`)
	b.waitJS("both clips restarted", `document.querySelector("#clips").dataset.played === "1" && [...document.querySelectorAll("#clips .clip-player")].every((p) => p.complete && p.naturalWidth > 0)`)
	b.screenshot(filepath.Join(shots, "4b-clips.png"))

	b.navigate(base + href + "/curves")
	b.waitJS("the curves", `Number(document.body.dataset.charts || 0) > 0`)
	b.eval(`document.querySelector("#select-none").click()`)
	b.waitJS("no curves", `!!document.querySelector("#charts p")`)
	b.eval(`document.querySelectorAll(".trial-box")[0].click(); document.querySelectorAll(".trial-box")[1].click()`)
	b.waitJS("two trials overlaid", `Number(document.body.dataset.charts || 0) > 0 && Number(document.body.dataset.series) === 2 * Number(document.body.dataset.charts)`)
	if n := b.evalString(`String(document.querySelectorAll("#curves-legend .legend-item").length)`); n != "2" {
		t.Errorf("the curves' legend has %s entries; want the two trials", n)
	}
	b.screenshot(filepath.Join(shots, "5-curves.png"))
	// The filter narrows the tags by name; a tag unticked by hand goes too.
	b.eval(`const f = document.querySelector("#tag-filter"); f.value = "^Train/"; f.dispatchEvent(new Event("input"))`)
	b.waitJS("the filtered tags", `Number(document.body.dataset.charts) > 0 && [...document.querySelectorAll(".chart")].every((c) => c.dataset.tag.startsWith("Train/"))`)
	n := b.evalString(`String(document.querySelectorAll(".chart").length)`)
	b.eval(`document.querySelector('.tag-pick[data-tag^="Train/"]:not([hidden]) input').click()`)
	b.waitJS("one tag fewer", `document.body.dataset.charts !== "0" && String(document.querySelectorAll(".chart").length) !== "`+n+`"`)

	b.navigate(base + "/presets")
	b.waitJS("the presets page", `!!document.querySelector("main h1") && document.querySelector("main h1").textContent === "Presets"`)
	b.screenshot(filepath.Join(shots, "6-presets.png"))
	t.Logf("screenshots in %s", shots)
}

// needChromium returns the Chromium to drive and where screenshots go ($TUNEBOT_ARTIFACTS,
// else the test's temp dir); without Chromium the test is skipped, saying how to install it.
func needChromium(t *testing.T) (bin, shots string) {
	t.Helper()
	bin = browsertest.Find()
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it): the browser test of the monitoring page is skipped")
	}
	shots = os.Getenv("TUNEBOT_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, shots
}

// page is a browsertest.Browser whose failures fail the test.
type page struct {
	t *testing.T
	b *browsertest.Browser
}

func startBrowser(t *testing.T, bin string) *page {
	t.Helper()
	b, err := browsertest.Start(bin, 1400, 1000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return &page{t: t, b: b}
}

// browserWait bounds each wait for the page (a sim trial takes a few seconds).
const browserWait = 90 * time.Second

func (p *page) navigate(u string) {
	p.t.Helper()
	if err := p.b.Navigate(u, browserWait); err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) waitJS(what, cond string) {
	p.t.Helper()
	if err := p.b.Wait(what, cond, browserWait); err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) eval(expr string) {
	p.t.Helper()
	if _, err := p.b.Eval(expr); err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) evalString(expr string) string {
	p.t.Helper()
	s, err := p.b.String(expr)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func (p *page) screenshot(path string) {
	p.t.Helper()
	if err := p.b.Screenshot(path); err != nil {
		p.t.Fatal(err)
	}
}
