package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"tunebot/private"
)

// Identity is who a sign-in link or cookie belongs to: a chat user (platform and user id),
// or the operator at the machine. It holds no roles: what a person may do is looked up at
// each request (Options.Roles and the allow-list), so a role taken away, or a name removed
// from the allow-list, counts on the page as soon as it does in chat.
type Identity struct {
	Platform string `json:"p"`
	ID       string `json:"u"`
	Name     string `json:"n,omitempty"`
}

// Operator is the identity of `tunebot dashboard link`: whoever can read the data
// directory's key file. cmd/tunebot grants it every permission, as it does the console. Its
// platform is the page, where it acts (the audit and the log say platform=dashboard).
var Operator = Identity{Platform: "dashboard", ID: "operator", Name: "operator"}

const (
	cookieName = "tunebot_dashboard"
	// LinkTTL is how long a sign-in link works (once).
	LinkTTL = 10 * time.Minute
	// CookieTTL is how long a sign-in lasts.
	CookieTTL = 12 * time.Hour
	keySize   = 32
)

// LoadKey reads the dashboard's signing key from path, creating it (0600) on first use; a
// key that is a link, another user's or open to others is refused (private.ReadFile). The
// key signs cookies, so a restart keeps people signed in. Whoever reads it can sign a cookie
// for any identity (the operator, or any chat user, with what the allow-list grants them),
// like whoever reads the store; RotateKey replaces it, signing everyone out.
func LoadKey(path string) ([]byte, error) {
	key, err := ReadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key = make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("making dashboard key: %w", err)
	}
	err = private.Create(path, []byte(hex.EncodeToString(key)+"\n"))
	if errors.Is(err, fs.ErrExist) {
		return ReadKey(path) // another process made it first (or a link is there: ReadKey refuses it)
	}
	if err != nil {
		return nil, fmt.Errorf("writing dashboard key: %w", err)
	}
	return key, nil
}

// ReadKey reads the key LoadKey made; a missing file is an error wrapping fs.ErrNotExist.
func ReadKey(path string) ([]byte, error) {
	b, err := private.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading dashboard key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < keySize {
		return nil, fmt.Errorf("dashboard key %s is damaged (want %d hex-encoded bytes); delete it and tunebot makes a new one, signing everyone out", path, keySize)
	}
	return key, nil
}

// RotateKey replaces the key at path with a fresh one (written beside it and renamed over
// it, 0600, never through a link, so a reader never sees half a key) and returns it: every
// cookie and link signed with the old key stops working.
func RotateKey(path string) ([]byte, error) {
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("making dashboard key: %w", err)
	}
	if err := private.WriteFile(path, []byte(hex.EncodeToString(key)+"\n")); err != nil {
		return nil, fmt.Errorf("writing dashboard key: %w", err)
	}
	return key, nil
}

// OperatorToken is what `tunebot dashboard link` shows the daemon to prove it read the key
// file: a MAC of a fixed label, so the key itself never travels.
func OperatorToken(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("tunebot dashboard operator link"))
	return hex.EncodeToString(m.Sum(nil))
}

// auth issues one-time sign-in links and signs and checks cookies.
type auth struct {
	now func() time.Time

	mu    sync.Mutex
	key   []byte          // replaced by rekey
	links map[string]link // by sha256 of the token: the token itself is not kept
}

type link struct {
	who     Identity
	expires time.Time
}

func newAuth(key []byte, now func() time.Time) *auth {
	return &auth{key: key, now: now, links: map[string]link{}}
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// issue returns a fresh one-time token for who.
func (a *auth) issue(who Identity) (string, time.Time, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", time.Time{}, fmt.Errorf("making a sign-in token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	now := a.now()
	exp := now.Add(LinkTTL)
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, l := range a.links { // expired links are dropped as new ones come
		if !now.Before(l.expires) {
			delete(a.links, k)
		}
	}
	a.links[tokenHash(token)] = link{who: who, expires: exp}
	return token, exp, nil
}

// redeem consumes token: it works once, before it expires.
func (a *auth) redeem(token string) (Identity, bool) {
	if token == "" || len(token) > 100 {
		return Identity{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	h := tokenHash(token)
	l, ok := a.links[h]
	delete(a.links, h)
	if !ok || !a.now().Before(l.expires) {
		return Identity{}, false
	}
	return l.who, true
}

type cookieBody struct {
	Identity
	Exp int64 `json:"e"`
}

// rekey signs with key from now on and forgets the links not yet used: everyone signed in
// and every link issued so far stop working.
func (a *auth) rekey(key []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.key, a.links = key, map[string]link{}
}

// operatorToken is OperatorToken of the key in use.
func (a *auth) operatorToken() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return OperatorToken(a.key)
}

func (a *auth) mac(payload string) string {
	a.mu.Lock()
	key := a.key
	a.mu.Unlock()
	m := hmac.New(sha256.New, key)
	m.Write([]byte("cookie\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// cookie is the signed sign-in cookie for who: HttpOnly and SameSite=Strict, so no script
// reads it and no other site's request carries it; Secure when the page is served over TLS.
func (a *auth) cookie(who Identity, secure bool) *http.Cookie {
	exp := a.now().Add(CookieTTL)
	raw, _ := json.Marshal(cookieBody{Identity: who, Exp: exp.Unix()})
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return &http.Cookie{Name: cookieName, Value: payload + "." + a.mac(payload), Path: "/",
		Expires: exp, MaxAge: int(CookieTTL / time.Second), HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// identity returns the signed-in person of r, if its cookie is valid and unexpired.
func (a *auth) identity(r *http.Request) (Identity, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) > 4096 {
		return Identity{}, false
	}
	payload, sig, ok := strings.Cut(c.Value, ".")
	if !ok || subtle.ConstantTimeCompare([]byte(sig), []byte(a.mac(payload))) != 1 {
		return Identity{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Identity{}, false
	}
	var b cookieBody
	if json.Unmarshal(raw, &b) != nil || b.Platform == "" || b.ID == "" || a.now().Unix() >= b.Exp {
		return Identity{}, false
	}
	return b.Identity, true
}
