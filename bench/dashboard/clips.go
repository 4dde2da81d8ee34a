package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"tunebot/bench/internal/web"
	"tunebot/bot"
	"tunebot/dashboard"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
)

// clipFigures measures serving one clip of trainer.MaxClipBytes to n clients at once, as
// the daemon serves it (issue 27): the process's peak resident memory (VmHWM, reset first)
// against the 64 MB goal. It runs before the page figures, so the process holds no more
// than a daemon would beside the requests.
func clipFigures(n int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tunebot-bench-clips")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	const sid = "c1c1c1c1c1c1c1c1"
	sessions := filepath.Join(dir, "sessions")
	if err := writeClip(ctx, db, sessions, sid); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	dash, err := dashboard.New(dashboard.Options{Store: db, Actions: noActions{}, Space: session.DefaultSpace(), Key: make([]byte, 32), BaseURL: base,
		ReadLimit: bot.RateLimit{Burst: 1 << 20, Every: time.Microsecond},
		Clips: func(t session.Trial, poster bool) (dashboard.ClipFile, error) {
			f, err := trainer.OpenClip(sessions, t, poster)
			if err != nil {
				return nil, err
			}
			return f, nil
		}})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: dash}
	go srv.Serve(ln)
	defer srv.Close()
	cookie, err := web.SignIn(dash, base)
	if err != nil {
		return err
	}
	url := base + "/api/sessions/" + sid + "/trials/0/0/clip"
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: n, MaxIdleConnsPerHost: n}}
	if _, err := web.Get(client, url, cookie); err != nil { // warm: one connection, the handler's pools
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak resident memory: %w", err)
	}
	before, _ := memStatus("VmRSS")
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			got, err := web.Get(client, url, cookie)
			if err == nil && got != trainer.MaxClipBytes {
				err = fmt.Errorf("got %d bytes of the clip, want %d", got, trainer.MaxClipBytes)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	peak, err := memStatus("VmHWM")
	if err != nil {
		return err
	}
	fmt.Printf("%d concurrent clip requests (%s each), in process as the daemon serves them: peak resident %.1f MB (%.1f MB before; goal ≤ 64 MB), %.1f s\n",
		n, session.Bytes(trainer.MaxClipBytes), float64(peak)/1e6, float64(before)/1e6, took.Seconds())
	return nil
}

// writeClip puts a clip of trainer.MaxClipBytes on trial 0 of session sid, as the engine
// records a checked one (the bytes are random: serving does not look at the container).
func writeClip(ctx context.Context, db *store.DB, sessions, sid string) error {
	run := filepath.Join(sessions, sid, "trial-000-rung-0")
	if err := os.MkdirAll(run, 0o755); err != nil {
		return err
	}
	data := make([]byte, trainer.MaxClipBytes)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(run, "clip.mp4"), data, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	st := session.DefaultSettings()
	st.Normalize()
	now := time.Now().UTC()
	if err := db.CreateSession(ctx, session.Session{ID: sid, State: session.StateSucceeded, Settings: st, Base: session.DefaultSpace().Defaults(), BestTrial: -1, CreatedAt: now, UpdatedAt: now}); err != nil {
		return err
	}
	return db.PutTrial(ctx, session.Trial{SessionID: sid, Number: 0, State: session.TrialCompleted, RewardConfig: session.DefaultSpace().Defaults(),
		Clip: &session.Clip{Format: session.ClipMP4, Width: 480, Height: 360, Seconds: 5,
			File: session.File{Path: "trial-000-rung-0/clip.mp4", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}}})
}

// memStatus reads a size from /proc/self/status ("VmRSS", "VmHWM"), in bytes.
func memStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no %s", field)
}
