// Package browsertest drives a headless Chromium through chromedp, just enough to test and
// time the monitoring page as a person's browser shows it: navigate, evaluate, wait for a
// condition, take a screenshot. Debian's chromium package is the browser.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
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

// Browser is one headless Chromium with one page.
type Browser struct {
	ctx     context.Context // the page's chromedp context
	cancel  context.CancelFunc
	stop    context.CancelFunc // the allocator's: ends the browser
	cmd     *exec.Cmd
	dataDir string
}

// callTimeout bounds one action.
const callTimeout = 60 * time.Second

// Start runs bin headless with a fresh profile of its own and opens a page of width × height.
// Close ends every process of the browser (Chromium forks helpers that outlive its main
// process when only that one is killed) and then removes the profile.
func Start(bin string, width, height int) (*Browser, error) {
	dataDir, err := os.MkdirTemp("", "tunebot-chromium-")
	if err != nil {
		return nil, err
	}
	b := &Browser{dataDir: dataDir}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(dataDir),
		chromedp.WindowSize(width, height),
		// Its own process group, so Close can end the helpers too.
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			if cmd.SysProcAttr == nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{}
			}
			cmd.SysProcAttr.Setpgid = true
			b.cmd = cmd
		}))
	alloc, stop := chromedp.NewExecAllocator(context.Background(), opts...)
	b.stop = stop
	b.ctx, b.cancel = chromedp.NewContext(alloc)
	// The first action starts the browser and must not run under a timeout (that would
	// end the browser with it).
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		b.Close()
		return nil, fmt.Errorf("starting chromium: %w", err)
	}
	return b, nil
}

// Close closes the page and the browser, kills what is left of its process group and
// removes the profile (retrying while late writers finish).
func (b *Browser) Close() {
	b.cancel()
	b.stop()
	if b.cmd != nil && b.cmd.Process != nil {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // helpers left in the group
	}
	for range 50 {
		if err := os.RemoveAll(b.dataDir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Eval runs a JavaScript expression in the page (promises awaited) and returns its value
// as JSON.
func (b *Browser) Eval(expr string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	return raw, nil
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
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return fmt.Errorf("opening %s: %w", u, err)
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
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("taking a screenshot: %w", err)
	}
	return os.WriteFile(path, png, 0o644)
}
