// Package cdp drives a headless Chromium over the DevTools protocol, just enough to test
// and time the monitoring page as a person's browser shows it: navigate, evaluate,
// wait for a condition, take a screenshot. Debian's chromium package is the browser.
package cdp

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// Find returns a Chromium (or Chrome) on PATH, "" when there is none.
func Find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium with one page, attached as a flat session.
type Browser struct {
	cmd     *exec.Cmd
	cancel  context.CancelFunc
	dataDir string // the profile, owned by the browser and removed by Close
	ws      *websocket.Conn
	session string

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan reply
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// callTimeout bounds one protocol call.
const callTimeout = 60 * time.Second

// Start runs bin headless with a fresh profile of its own and opens a page of width × height.
// Close ends every process of the browser (Chromium forks helpers that outlive its main
// process when only that one is killed) and then removes the profile.
func Start(bin string, width, height int) (*Browser, error) {
	b, stderr, err := launch(bin, width, height)
	if err != nil {
		return nil, err
	}
	u, err := devToolsURL(stderr)
	if err != nil {
		b.Close()
		return nil, err
	}
	if b.ws, _, err = websocket.DefaultDialer.Dial(u, nil); err != nil {
		b.Close()
		return nil, fmt.Errorf("connecting to chromium: %w", err)
	}
	go b.read()
	if err := b.openPage(width, height); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// launch starts headless Chromium in its own process group (killed whole on Close) with a
// fresh profile directory, its DevTools endpoint on a free local port.
func launch(bin string, width, height int) (*Browser, io.Reader, error) {
	dataDir, err := os.MkdirTemp("", "tunebot-chromium-")
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		"--user-data-dir="+dataDir, fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		os.RemoveAll(dataDir)
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		os.RemoveAll(dataDir)
		return nil, nil, fmt.Errorf("starting chromium: %w", err)
	}
	return &Browser{cmd: cmd, cancel: cancel, dataDir: dataDir, waiting: map[int]chan reply{}}, stderr, nil
}

// devToolsURL reads Chromium's stderr for its DevTools endpoint, waiting callTimeout at
// most; the rest of stderr is read and dropped so Chromium never blocks on it.
func devToolsURL(stderr io.Reader) (string, error) {
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
	select {
	case u := <-wsURL:
		return u, nil
	case <-time.After(callTimeout):
		return "", fmt.Errorf("chromium did not open its DevTools endpoint")
	}
}

// openPage creates the page the browser drives, attaches to it, and sets its size.
func (b *Browser) openPage(width, height int) error {
	var target struct {
		TargetID string `json:"targetId"`
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return err
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return err
	}
	b.session = att.SessionID
	for method, params := range map[string]any{"Page.enable": nil,
		"Emulation.setDeviceMetricsOverride": map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}} {
		if err := b.call(b.session, method, params, nil); err != nil {
			return err
		}
	}
	return nil
}

// Close asks the browser to quit, gives it a few seconds, then kills its whole process
// group, waits for it and removes the profile (retrying while late writers finish).
func (b *Browser) Close() {
	if b.ws != nil {
		done := make(chan struct{})
		go func() { _ = b.call("", "Browser.close", nil, nil); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
		}
		b.ws.Close()
	}
	exited := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	b.cancel()
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // helpers left in the group
	<-exited
	for i := 0; i < 50; i++ {
		if err := os.RemoveAll(b.dataDir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *Browser) read() {
	for {
		var msg struct {
			ID int `json:"id"`
			reply
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
			ch <- msg.reply
		}
	}
}

func (b *Browser) call(session, method string, params, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
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
	case <-time.After(callTimeout):
		return fmt.Errorf("%s: no answer from chromium", method)
	}
}

type evalResult struct {
	Result struct {
		Value json.RawMessage `json:"value"`
	} `json:"result"`
	Exception *struct {
		Text      string `json:"text"`
		Exception *struct {
			Description string `json:"description"`
		} `json:"exception"`
	} `json:"exceptionDetails"`
}

// Eval runs a JavaScript expression in the page (promises awaited) and returns its value
// as JSON.
func (b *Browser) Eval(expr string) (json.RawMessage, error) {
	var r evalResult
	if err := b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return nil, err
	}
	if r.Exception != nil {
		msg := r.Exception.Text
		if r.Exception.Exception != nil {
			msg += " " + r.Exception.Exception.Description
		}
		return nil, fmt.Errorf("%s: %s", expr, msg)
	}
	return r.Result.Value, nil
}

// String evaluates expr and returns its value as a string ("" for a non-string).
func (b *Browser) String(expr string) (string, error) {
	raw, err := b.Eval(expr)
	if err != nil {
		return "", err
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s, nil
}

// Navigate opens u and waits until the document has loaded.
func (b *Browser) Navigate(u string, timeout time.Duration) error {
	if err := b.call(b.session, "Page.navigate", map[string]any{"url": u}, nil); err != nil {
		return err
	}
	return b.Wait("the page to load", `document.readyState === "complete"`, timeout)
}

// Wait polls cond (a JavaScript expression) until it is true; on timeout the error says
// what the page shows. A page navigating meanwhile is waited through.
func (b *Browser) Wait(what, cond string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		raw, err := b.Eval("!!(" + cond + ")")
		if err == nil && string(raw) == "true" {
			return nil
		}
		if time.Now().After(deadline) {
			text, _ := b.String(`document.body ? document.body.innerText.slice(0, 2000) : ""`)
			return fmt.Errorf("timed out waiting for %s; the page shows:\n%s", what, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Screenshot writes the whole page as a PNG to path.
func (b *Browser) Screenshot(path string) error {
	var r struct {
		Data string `json:"data"`
	}
	if err := b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}
