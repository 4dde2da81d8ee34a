package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

func TestSeriesRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		points []session.Point
	}{
		{"empty", []session.Point{}},
		{"one", []session.Point{{Step: 0, Value: 1.5}}},
		{"repeated steps", []session.Point{{Step: 5, Value: 1}, {Step: 5, Value: 2}, {Step: 5, Value: 2}, {Step: 6, Value: -1}}},
		{"unordered and negative steps", []session.Point{{Step: 100, Value: 1}, {Step: -7, Value: 2}, {Step: 3, Value: 3}, {Step: -1 << 40, Value: 4}}},
		{"extreme steps", []session.Point{{Step: math.MaxInt64, Value: 1}, {Step: math.MinInt64, Value: 2}, {Step: 0, Value: 3}, {Step: math.MaxInt64, Value: 4}}},
		{"extreme values", []session.Point{{Step: 1, Value: -math.MaxFloat64}, {Step: 2, Value: math.MaxFloat64}, {Step: 3, Value: math.SmallestNonzeroFloat64}, {Step: 4, Value: math.Copysign(0, -1)}, {Step: 5, Value: -1e-300}}},
		{"non-finite values", []session.Point{{Step: 1, Value: math.Inf(1)}, {Step: 2, Value: math.Inf(-1)}, {Step: 3, Value: math.NaN()}}},
	}
	ctx := context.Background()
	db, _ := openDB(t)
	// Bit-exact comparison, so that NaN equals NaN and -0 differs from 0.
	bits := cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := session.SeriesKey{SessionID: "s1", Number: i, Rung: 0, Tag: "Train/mean_reward"}
			if err := db.PutSeries(ctx, key, tt.points); err != nil {
				t.Fatal(err)
			}
			got, err := db.Series(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.points) {
				t.Fatalf("%d points back, want %d", len(got), len(tt.points))
			}
			if diff := cmp.Diff(tt.points, got, bits); len(got) > 0 && diff != "" {
				t.Errorf("Series (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeriesReplaceTagsAndBatch(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	ref := session.TrialRef{Number: 3, Rung: 1}
	key := func(tag string) session.SeriesKey {
		return session.SeriesKey{SessionID: "s1", Number: ref.Number, Rung: ref.Rung, Tag: tag}
	}
	if err := db.PutSeries(ctx, key("b"), []session.Point{{Step: 1, Value: 1}, {Step: 2, Value: 2}}); err != nil {
		t.Fatal(err)
	}
	batch := map[string][]session.Point{"a": {{Step: 1, Value: 10}}, "b": {{Step: 9, Value: 9}}, "Episode_Reward/track": {{Step: 0, Value: 0.5}}}
	if err := db.PutSeriesBatch(ctx, "s1", ref, batch); err != nil {
		t.Fatal(err)
	}
	if err := db.PutSeries(ctx, key("z"), []session.Point{{Step: 1, Value: 1}}); err != nil {
		t.Fatal(err)
	}
	tags, err := db.SeriesTags(ctx, "s1", ref)
	if diff := cmp.Diff([]string{"Episode_Reward/track", "a", "b", "z"}, tags); err != nil || diff != "" {
		t.Errorf("SeriesTags: %v, diff (-want +got):\n%s", err, diff)
	}
	got, err := db.Series(ctx, key("b"))
	if diff := cmp.Diff([]session.Point{{Step: 9, Value: 9}}, got); err != nil || diff != "" {
		t.Errorf("replaced series: %v, diff (-want +got):\n%s", err, diff)
	}
	if tags, err := db.SeriesTags(ctx, "s1", session.TrialRef{Number: 3}); err != nil || len(tags) != 0 {
		t.Errorf("SeriesTags of another rung: %v, %v", tags, err)
	}
	if _, err := db.Series(ctx, key("missing")); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Series of a missing tag: %v, want ErrNotFound", err)
	}
	if err := db.PutSeriesBatch(ctx, "s1", ref, map[string][]session.Point{"": nil}); err == nil {
		t.Error("PutSeriesBatch accepted an empty tag")
	}
}

// TestSeriesBatchStoresEachTagOnItsOwn: a tag no curve may carry (empty, not UTF-8, over
// session.MaxTagBytes) is left out and named by a short prefix, and the rest of the batch is
// stored (issue 36: one such tag failed the whole batch and was quoted whole in the log).
// The 64 KiB tag, over bbolt's 32 KiB key too, is refused by session.TagProblem before bbolt
// sees it; TestSeriesBatchNamesATagBboltRefuses reaches bbolt's refusal.
func TestSeriesBatchStoresEachTagOnItsOwn(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	ref := session.TrialRef{Number: 1}
	pts := []session.Point{{Step: 1, Value: 1}}
	huge := strings.Repeat("h", 64<<10)
	batch := map[string][]session.Point{"Loss/value": pts, "": pts, "bad\xff": pts, strings.Repeat("l", session.MaxTagBytes+1): pts, huge: pts}
	err := db.PutSeriesBatch(ctx, "s1", ref, batch)
	if err == nil {
		t.Fatal("PutSeriesBatch accepted tags no curve may carry")
	}
	for _, want := range []string{`"" of trial 1 @ rung 0 of session s1 not stored: its tag is empty`, `"bad\xff" of trial 1 @ rung 0 of session s1 not stored: its tag is not UTF-8`,
		`(257 bytes) of trial 1 @ rung 0 of session s1 not stored: its tag is 257 bytes, more than 256`, `(65536 bytes) of trial 1 @ rung 0 of session s1 not stored`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %.500s", want, err)
		}
	}
	if len(err.Error()) > 1000 {
		t.Errorf("the error is %d bytes: it quotes a tag whole", len(err.Error()))
	}
	tags, err := db.SeriesTags(ctx, "s1", ref)
	if diff := cmp.Diff([]string{"Loss/value"}, tags); err != nil || diff != "" {
		t.Errorf("stored tags: %v, diff (-want +got):\n%s", err, diff)
	}
}

// BenchmarkPutSeriesBatch writes one trial's worth of series: 40 tags × 2000 points.
func BenchmarkPutSeriesBatch(b *testing.B) {
	ctx := context.Background()
	db, _ := openDB(b)
	series := map[string][]session.Point{}
	for tag := range 40 {
		pts := make([]session.Point, 2000)
		for i := range pts {
			pts[i] = session.Point{Step: int64(i), Value: math.Sin(float64(i*tag)) * 100}
		}
		series[fmt.Sprint("Episode_Reward/term_", tag)] = pts
	}
	for i := 0; b.Loop(); i++ {
		if err := db.PutSeriesBatch(ctx, "s1", session.TrialRef{Number: i}, series); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSeriesTagsPage: a page of a trial's tags starts after the tag given (present or not)
// and holds at most limit tags, in byte order.
func TestSeriesTagsPage(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	ref := session.TrialRef{Number: 2}
	batch := map[string][]session.Point{}
	for _, tag := range []string{"a", "b", "c", "d", "e"} {
		batch[tag] = []session.Point{{Step: 1, Value: 1}}
	}
	if err := db.PutSeriesBatch(ctx, "s1", ref, batch); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 2, []string{"a", "b"}}, {"b", 2, []string{"c", "d"}}, {"bb", 10, []string{"c", "d", "e"}}, {"e", 3, []string{}},
	} {
		got, err := db.SeriesTagsPage(ctx, "s1", ref, tc.after, tc.limit)
		if diff := cmp.Diff(tc.want, got); err != nil || diff != "" {
			t.Errorf("after %q limit %d: %v (-want +got):\n%s", tc.after, tc.limit, err, diff)
		}
	}
	if got, err := db.SeriesTagsPage(ctx, "s1", session.TrialRef{Number: 9}, "", 5); err != nil || len(got) != 0 {
		t.Errorf("a trial without curves: %v %v", got, err)
	}
}
