package dashboard_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/dashboard"
	"tunebot/session"
	"tunebot/trainer"
)

// TestClipIsServedFromTheCheckedDescriptor: a clip swapped for a FIFO after it was opened
// and checked is served as the bytes that were checked, from that descriptor, without
// hanging; the next request meets the FIFO and is refused at once (issue 27, item 2).
func TestClipIsServedFromTheCheckedDescriptor(t *testing.T) {
	var f *fixture
	swap := func(t *testing.T) {} // replaced once the fixture exists
	f = newFixture(t, func(o *dashboard.Options) {
		o.Clips = func(tr session.Trial, poster bool) (dashboard.ClipFile, error) {
			c, err := trainer.OpenClip(f.dir, tr, poster)
			if err != nil {
				return nil, err
			}
			swap(t)
			return c, nil
		}
	})
	gifData, _, _, run := f.putClip(t)
	clip := filepath.Join(run, "clip")
	swap = func(t *testing.T) {
		swap = func(*testing.T) {}
		if err := syscall.Mkfifo(clip+".fifo", 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(clip+".fifo", clip); err != nil {
			t.Error(err)
		}
	}
	user := f.signIn(t, dashboard.Identity{Platform: "slack", ID: "U2", Name: "bob"})
	get := func() (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/api/sessions/"+sid+"/trials/2/0/clip", nil)
		resp := user.do(req)
		return resp.StatusCode, readAll(t, resp)
	}
	if code, body := get(); code != http.StatusOK || body != string(gifData) {
		t.Errorf("the clip swapped while served: %d, %d bytes; want the %d checked", code, len(body), len(gifData))
	}
	if code, body := get(); code != http.StatusConflict || !strings.Contains(body, "is a named pipe (FIFO), not a regular file") {
		t.Errorf("the swapped clip: %d %q", code, body)
	}
}

// TestClipServeStreams: serving a clip reads it through a small buffer from its
// descriptor, not into memory whole: a 12 MiB clip costs the process far less than 12 MiB
// of allocations (issue 27, item 2).
func TestClipServeStreams(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	run := filepath.Join(f.dir, sid, "trial-002-rung-0")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 12<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(run, "clip.gif"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	trials, _ := f.db.Trials(ctx, sid)
	tr := trials[2]
	tr.Clip = &session.Clip{Format: session.ClipGIF, Width: 64, Height: 48,
		File: session.File{Path: "trial-002-rung-0/clip.gif", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}}
	if err := f.db.PutTrial(ctx, tr); err != nil {
		t.Fatal(err)
	}
	clear(data)
	user := f.signIn(t, dashboard.Identity{Platform: "slack", ID: "U2", Name: "bob"})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp := user.get("/api/sessions/" + sid + "/trials/2/0/clip")
	n, err := io.Copy(io.Discard, resp.Body)
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusOK || err != nil || n != 12<<20 {
		t.Fatalf("clip: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("serving a 12 MiB clip allocated %s; it is streamed, not read whole", session.Bytes(int64(alloc)))
	}
}
