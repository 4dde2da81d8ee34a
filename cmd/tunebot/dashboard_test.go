package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
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

// TestDashboardLinkCommand: the operator's link, asked of the running daemon over its
// loopback listener, signs in once; without a daemon the command says why.
func TestDashboardLinkCommand(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: data\nservice: {addr: %q}\n", addr))
	out, err := exec.Command(tunebotBin, "dashboard", "link", "--config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is it running?") {
		t.Fatalf("without a daemon: %v %s", err, out)
	}
	startDaemon(t, cfg)
	link := dashboardLink(t, cfg)
	u, _ := url.Parse(link)
	if u.Host != addr {
		t.Errorf("link %s is not on the listener %s", link, addr)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signin := func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/signin", strings.NewReader("token="+url.QueryEscape(u.Query().Get("token"))))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+addr)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := signin()
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
	if v.Platform != "cli" || !v.May["decide"] || !v.May["start"] {
		t.Errorf("the operator is %+v; want every permission", v)
	}
	if again := signin(); again.StatusCode != http.StatusUnauthorized {
		t.Errorf("a link used twice: %d", again.StatusCode)
	}
	if info, err := os.Stat(filepath.Join(dir, "data", dashboardKeyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", info, err)
	}
}

// findChromium returns Debian's Chromium (or another Chrome) on PATH.
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDashboardInChromium drives the page in a real headless Chromium against a daemon
// running a sim session in approval mode: sign in through the operator's link, see the
// session, approve its proposal from the page and see the session go on, overlay two
// trials' curves. Screenshots go to $TUNEBOT_ARTIFACTS (else the test's temp dir).
func TestDashboardInChromium(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it): the browser test of the monitoring page is skipped")
	}
	shots := os.Getenv("TUNEBOT_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: data\nservice: {addr: %q}\n", addr))
	_, stdin, out := startDaemon(t, cfg)
	stdin.WriteString("/tune start mode=approval trials=4 rungs=20,40,60 fallback=true\n")
	waitFor(t, "the first proposal", 60*time.Second, func() bool { return strings.Contains(out.String(), "Approve") })
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
	b.waitJS("the sessions page", `location.pathname === "/" && !!document.querySelector("#sessions tbody tr")`)
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
	b.screenshot(filepath.Join(shots, "3-session-waiting.png"))
	b.eval(`document.querySelector("#approve").click()`)
	b.waitJS("the approval's answer", `(document.querySelector("#decide-msg")||{}).textContent.includes("approved by operator")`)
	// The session goes on by itself: a new trial appears without a reload.
	b.waitJS("the approved trial to appear", `document.body.dataset.trials !== "`+trials+`"`)
	b.screenshot(filepath.Join(shots, "4-session-continued.png"))
	if rows := b.evalString(`String(document.querySelectorAll("#leaderboard tbody tr").length)`); rows == "0" {
		t.Error("empty leaderboard")
	}

	b.navigate(base + href + "/curves")
	b.waitJS("the curves", `Number(document.body.dataset.charts || 0) > 0`)
	b.eval(`document.querySelector("#select-none").click()`)
	b.waitJS("no curves", `!!document.querySelector("#charts p")`)
	b.eval(`document.querySelectorAll(".trial-box")[0].click(); document.querySelectorAll(".trial-box")[1].click()`)
	b.waitJS("two trials overlaid", `Number(document.body.dataset.charts || 0) > 0 && Number(document.body.dataset.series) === 2 * Number(document.body.dataset.charts)`)
	if n := b.evalString(`String(document.querySelector(".chart").querySelectorAll(".u-legend .u-series").length)`); n != "3" {
		t.Errorf("the first chart's legend has %s entries; want step and two trials", n)
	}
	b.screenshot(filepath.Join(shots, "5-curves.png"))

	b.navigate(base + "/presets")
	b.waitJS("the presets page", `!!document.querySelector("main h1") && document.querySelector("main h1").textContent === "Presets"`)
	b.screenshot(filepath.Join(shots, "6-presets.png"))
	t.Logf("screenshots in %s", shots)
}

// browser is headless Chromium driven over the DevTools protocol (one page, flat session).
type browser struct {
	t       *testing.T
	ws      *websocket.Conn
	session string

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpReply
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func startBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		"--user-data-dir="+t.TempDir(), "--window-size=1400,1000", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	wsURL := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				wsURL <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var u string
	select {
	case u = <-wsURL:
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not start its DevTools endpoint")
	}
	ws, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	b := &browser{t: t, ws: ws, waiting: map[int]chan cdpReply{}}
	go b.read()
	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	b.call(b.session, "Page.enable", nil, nil)
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

func (b *browser) read() {
	for {
		var msg struct {
			ID int `json:"id"`
			cdpReply
		}
		if err := b.ws.ReadJSON(&msg); err != nil {
			return
		}
		if msg.ID == 0 {
			continue // an event
		}
		b.mu.Lock()
		ch := b.waiting[msg.ID]
		delete(b.waiting, msg.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- msg.cdpReply
		}
	}
}

func (b *browser) call(session, method string, params any, out any) {
	b.t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		b.t.Fatal(err)
	}
}

// try is call, with the protocol's error returned (a page navigating away answers one).
func (b *browser) try(session, method string, params any, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.waiting[id] = ch
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	err := b.ws.WriteJSON(msg)
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("%s: %w", method, err)
			}
		}
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s: no answer from chromium", method)
	}
}

func (b *browser) navigate(u string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": u}, nil)
	b.waitJS("the page to load", `document.readyState === "complete"`)
}

type evalResult struct {
	Result struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"result"`
	Exception *struct {
		Text string `json:"text"`
	} `json:"exceptionDetails"`
}

func (b *browser) eval(expr string) evalResult {
	b.t.Helper()
	var r evalResult
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	if r.Exception != nil {
		b.t.Fatalf("%s: %s", expr, r.Exception.Text)
	}
	return r
}

func (b *browser) evalString(expr string) string {
	b.t.Helper()
	var s string
	_ = json.Unmarshal(b.eval(expr).Result.Value, &s)
	return s
}

// waitJS waits until cond (a JavaScript expression) is true; on timeout it fails with what
// the page shows.
func (b *browser) waitJS(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var r evalResult
		err := b.try(b.session, "Runtime.evaluate", map[string]any{"expression": "!!(" + cond + ")", "returnByValue": true}, &r)
		if err == nil && r.Exception == nil && string(r.Result.Value) == "true" {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s; the page shows:\n%s", what, b.evalString(`document.body ? document.body.innerText.slice(0, 2000) : ""`))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *browser) screenshot(path string) {
	b.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
