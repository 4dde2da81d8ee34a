// Package web is what the benchmarks that load the monitoring page share: a signed-in
// cookie and a timed GET.
package web

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"tunebot/dashboard"
)

// SignIn goes through a one-time link of dash, served at base, and returns the cookie.
func SignIn(dash *dashboard.Server, base string) (*http.Cookie, error) {
	link, _, err := dash.Link(dashboard.Identity{Platform: "cli", ID: "bench"})
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(link)
	req, _ := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader("token="+url.QueryEscape(u.Query().Get("token"))))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if len(resp.Cookies()) == 0 {
		return nil, fmt.Errorf("sign-in failed: %s", resp.Status)
	}
	return resp.Cookies()[0], nil
}

// Get reads u with cookie and returns the body's size.
func Get(c *http.Client, u string, cookie *http.Cookie) (int64, error) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.AddCookie(cookie)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return n, err
}
