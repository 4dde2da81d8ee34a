package store

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

// FuzzDecodeSeries checks that any stored bytes decode to an error or to points that encode
// back to the same bytes, and never panic or allocate from a corrupt count.
func FuzzDecodeSeries(f *testing.F) {
	f.Add(encodeSeries(nil))
	f.Add(encodeSeries([]session.Point{{Step: 1, Value: 2}, {Step: math.MinInt64, Value: math.NaN()}}))
	f.Add([]byte{seriesVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(binary.AppendUvarint([]byte{seriesVersion}, 1<<62))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, buf []byte) {
		pts, err := decodeSeries(buf)
		if err != nil {
			return
		}
		if again := encodeSeries(pts); string(again) != string(buf) {
			// Varints have one canonical form when written, so only non-canonical input differs.
			back, err := decodeSeries(again)
			if err != nil || len(back) != len(pts) {
				t.Fatalf("re-encoding %x gave %x that decodes to %v, %v", buf, again, back, err)
			}
		}
	})
}

// TestSeriesBatchNamesATagBboltRefuses: a tag session.TagProblem takes but bbolt refuses
// (here a bucket where its series would go, as only a damaged store has) is left out and
// named, and the rest of the batch is stored.
func TestSeriesBatchNamesATagBboltRefuses(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "tunebot.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ref := session.TrialRef{Number: 1}
	if err := db.update(ctx, func(tx *bolt.Tx) error {
		s, err := subCreate(tx, bucketSeries, "s1")
		if err != nil {
			return err
		}
		b, err := s.CreateBucketIfNotExists(trialKey(ref))
		if err != nil {
			return err
		}
		_, err = b.CreateBucket([]byte("Loss/value"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pts := []session.Point{{Step: 1, Value: 1}}
	err = db.PutSeriesBatch(ctx, "s1", ref, map[string][]session.Point{"Loss/value": pts, "Loss/other": pts})
	if want := `series "Loss/value" of trial 1 @ rung 0 of session s1 not stored: `; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Loss/other") {
		t.Fatalf("PutSeriesBatch: %v; want only %q...", err, want)
	}
	if got, err := db.Series(ctx, session.SeriesKey{SessionID: "s1", Number: 1, Tag: "Loss/other"}); err != nil || len(got) != 1 {
		t.Fatalf("the other tag: %v %v", got, err)
	}
}
