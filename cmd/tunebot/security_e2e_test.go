package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/bot/slack/slacktest"
)

var signinRE = regexp.MustCompile(`http://[^\s<>|]+/signin\?token=[A-Za-z0-9_-]+`)

// signInWith redeems a sign-in link as the page's button does and returns the cookie.
func signInWith(t *testing.T, link string) *http.Cookie {
	t.Helper()
	resp := postSignIn(t, link)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in with %s: %d %v", link, resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

// postSignIn posts a sign-in link's token as the page's button does, from the page's own
// origin, and returns the answer unfollowed (its body closed): a redirect and a cookie when
// the link is good.
func postSignIn(t *testing.T, link string) *http.Response {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, u.Scheme+"://"+u.Host+"/signin", strings.NewReader("token="+url.QueryEscape(u.Query().Get("token"))))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// pageStatus is the status of method path on the page at addr with cookie.
func pageStatus(t *testing.T, method, addr, path string, cookie *http.Cookie) int {
	t.Helper()
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, "http://"+addr+path, body)
	req.Header.Set("Origin", "http://"+addr)
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReadGrantAndRotateThroughTheBinary: with chat.slack.read_groups set, someone outside
// the allow-list and the read group is refused /tune dashboard (no link), a member of the
// read group gets one and reads the page but may not act; `tunebot dashboard rotate` signs
// everyone out of the running daemon at once, and with no daemon replaces the key file.
func TestReadGrantAndRotateThroughTheBinary(t *testing.T) {
	fake := slacktest.New()
	defer fake.Close()
	fake.SetGroups(slacktest.Group{ID: "SREAD", Users: []string{"UREADER"}})
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf(`
data_dir: data
service: {addr: %q}
chat:
  slack:
    enabled: true
    api_url: %s
    channel: %s
    allow_users: [%s]
    read_groups: [SREAD]
`, addr, fake.URL, slackChannel, slackAlice))
	cmd, _, logs := startDaemon(t, cfg, "SLACK_BOT_TOKEN="+slacktest.BotToken, "SLACK_APP_TOKEN="+slacktest.AppToken)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := &slackRun{t: t, fake: fake, ctx: ctx}
	if err := fake.WaitConnected(ctx); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, logs.String())
	}

	r.send("slash_commands", fake.Slash(slackEve, slackChannel, "dashboard"))
	if res := r.response(`"read" permission`); res.ResponseType != "ephemeral" || signinRE.MatchString(res.Text) {
		t.Errorf("eve, who may not read, asked for a link: %s %q", res.ResponseType, res.Text)
	}
	r.send("slash_commands", fake.Slash("UREADER", slackChannel, "dashboard"))
	res := r.response("sign-in link")
	link := signinRE.FindString(res.Text)
	if res.ResponseType != "ephemeral" || link == "" {
		t.Fatalf("the reader's link: %s %q", res.ResponseType, res.Text)
	}
	reader := signInWith(t, link)
	if got := pageStatus(t, http.MethodGet, addr, "/api/sessions", reader); got != http.StatusOK {
		t.Errorf("the reader reads the page: %d", got)
	}
	if got := pageStatus(t, http.MethodPost, addr, "/api/start", reader); got != http.StatusForbidden {
		t.Errorf("the reader starts a session from the page: %d", got)
	}

	keyPath := filepath.Join(dir, "data", dashboardKeyFile)
	before, _ := os.ReadFile(keyPath)
	out, err := exec.Command(tunebotBin, "dashboard", "rotate", "--config", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "signed everyone out") {
		t.Fatalf("dashboard rotate: %v %s", err, out)
	}
	if got := pageStatus(t, http.MethodGet, addr, "/api/sessions", reader); got != http.StatusUnauthorized {
		t.Errorf("a cookie from before the rotation: %d", got)
	}
	if after, _ := os.ReadFile(keyPath); string(after) == string(before) {
		t.Error("the key file is unchanged: the next start would accept the old cookies again")
	}
	operator := signInWith(t, dashboardLink(t, cfg))
	if got := pageStatus(t, http.MethodGet, addr, "/api/sessions", operator); got != http.StatusOK {
		t.Errorf("the operator signs in again after the rotation: %d", got)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before, _ = os.ReadFile(keyPath)
	out, err = exec.Command(tunebotBin, "dashboard", "rotate", "--config", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no daemon was running") {
		t.Fatalf("dashboard rotate without a daemon: %v %s", err, out)
	}
	if after, _ := os.ReadFile(keyPath); string(after) == string(before) {
		t.Error("without a daemon the key file is unchanged")
	}
}
