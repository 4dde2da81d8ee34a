package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
	"tunebot/store"
)

// filledFile writes a data file with enough sessions and series to span many pages, and
// returns its path, its used size (the pages bbolt counts) and the page bbolt's page size.
func filledFile(t *testing.T) (path string, used int64, pageSize int) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "tunebot.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pts := make([]session.Point, 400)
	for i := range pts {
		pts[i] = session.Point{Step: int64(i), Value: float64(i) / 3}
	}
	for i := range 40 {
		s := newSession(fmt.Sprintf("s%03d", i), session.StateSucceeded, t0.Add(time.Duration(i)*time.Minute))
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		for n := range 4 {
			if err := db.PutSeries(ctx, session.SeriesKey{SessionID: s.ID, Number: n, Tag: "Train/mean_reward"}, pts); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.View(func(tx *bolt.Tx) error {
		used, pageSize = tx.Size(), tx.DB().Info().PageSize
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, used, pageSize
}

// rootPage is the page id of a top-level bucket's root.
func rootPage(t *testing.T, path, bucket string) int64 {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var id int64
	err = b.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil || bk.Root() == 0 {
			return fmt.Errorf("bucket %s is missing or inline", bucket)
		}
		id = int64(bk.Root())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func overwrite(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from string) string {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "tunebot.db")
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

func garbage(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// A damaged data file is refused with one sentence naming it, whatever the damage: bbolt
// errors, panics and faults all become that answer, and Check says the same.
func TestDamagedFileIsRefusedPlainly(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string, used int64, pageSize int)
	}{
		{"truncated to half its pages", func(t *testing.T, path string, used int64, pageSize int) {
			if err := os.Truncate(path, used/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated to three pages", func(t *testing.T, path string, used int64, pageSize int) {
			if err := os.Truncate(path, 3*int64(pageSize)); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated inside the meta pages", func(t *testing.T, path string, used int64, pageSize int) {
			if err := os.Truncate(path, int64(pageSize)+100); err != nil {
				t.Fatal(err)
			}
		}},
		{"both meta pages garbled", func(t *testing.T, path string, used int64, pageSize int) {
			overwrite(t, path, 0, garbage(2*pageSize, 1))
		}},
		{"the sessions bucket's root page garbled", func(t *testing.T, path string, used int64, pageSize int) {
			overwrite(t, path, rootPage(t, path, "sessions")*int64(pageSize), garbage(pageSize, 2))
		}},
		{"the series bucket's root page zeroed", func(t *testing.T, path string, used int64, pageSize int) {
			overwrite(t, path, rootPage(t, path, "series")*int64(pageSize), make([]byte, pageSize))
		}},
		{"every page after the metas garbled", func(t *testing.T, path string, used int64, pageSize int) {
			overwrite(t, path, 2*int64(pageSize), garbage(int(used)-2*pageSize, 3))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, used, pageSize := filledFile(t)
			tc.damage(t, path, used, pageSize)
			for name, open := range map[string]func(path string) error{
				"Open": func(path string) error {
					db, err := store.Open(path, store.Options{Timeout: 50 * time.Millisecond})
					if err == nil {
						db.Close()
					}
					return err
				},
				"Check": func(path string) error { return store.Check(path, store.Options{Timeout: 50 * time.Millisecond}) },
			} {
				// Each on its own copy: a file bbolt panicked on stays locked by this process.
				path := copyFile(t, path)
				want := fmt.Sprintf("data file %s is damaged: restore a backup or move it aside", path)
				err := open(path)
				var de *store.DamagedError
				if !errors.As(err, &de) || !errors.Is(err, session.ErrDamaged) || err.Error() != want || de.Detail == "" {
					t.Fatalf("%s: %v, want %q with what was found", name, err, want)
				}
			}
		})
	}
}

// A sound file passes the check, read-write and read-only.
func TestSoundFilePassesTheCheck(t *testing.T) {
	path, _, _ := filledFile(t)
	if err := store.Check(path, store.Options{}); err != nil {
		t.Fatalf("Check: %v", err)
	}
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := db.Sessions(context.Background())
	if err != nil || len(all) != 40 {
		t.Fatalf("read-only: %d sessions, %v", len(all), err)
	}
	if err := db.CreateSession(context.Background(), newSession("new", session.StateRunning, t0)); err == nil {
		t.Fatal("a read-only store accepted a write")
	}
}

// TestOpenRefusesAFIFOWithoutWaiting: a FIFO planted at the data file held backup and
// doctor (which give Open no OpenFile) in open for ever, past SIGTERM. Open and Check
// refuse it at once, saying what it is.
func TestOpenRefusesAFIFOWithoutWaiting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tunebot.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() error{
		"Open read-only": func() error {
			db, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
			if err == nil {
				db.Close()
			}
			return err
		},
		"Check": func() error { return store.Check(path, store.Options{Timeout: 200 * time.Millisecond}) },
	} {
		done := make(chan error, 1)
		go func() { done <- open() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path+" is a FIFO, not a regular file") {
				t.Errorf("%s of a FIFO: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s of a FIFO still waits after 5 s", name)
		}
	}
}
