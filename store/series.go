package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

// Series are stored packed rather than as JSON: a trial can carry 40 tags × 2000 points and
// the engine writes them between two training jobs. The layout is
//
//	version byte (1) | uvarint count | count × (varint step delta | 8 bytes float64 bits)
//
// Step deltas are signed, so repeated, unordered and extreme steps round-trip (the delta
// arithmetic wraps and unwraps in two's complement). Values are stored bit for bit, so NaN
// and ±Inf round-trip too, although points read from event files are finite.
const seriesVersion = 1

func encodeSeries(points []session.Point) []byte {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+len(points)*(2+8))
	buf = append(buf, seriesVersion)
	buf = binary.AppendUvarint(buf, uint64(len(points)))
	var prev int64
	for _, p := range points {
		buf = binary.AppendVarint(buf, p.Step-prev)
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(p.Value))
		prev = p.Step
	}
	return buf
}

var errSeriesCorrupt = errors.New("corrupt series record")

func decodeSeries(buf []byte) ([]session.Point, error) {
	if len(buf) == 0 || buf[0] != seriesVersion {
		return nil, errSeriesCorrupt
	}
	buf = buf[1:]
	n, w := binary.Uvarint(buf)
	// Each point takes at least 9 bytes, which bounds a corrupt count before allocating.
	if w <= 0 || n > uint64(len(buf)-w)/9 {
		return nil, errSeriesCorrupt
	}
	buf = buf[w:]
	out := make([]session.Point, n)
	var step int64
	for i := range out {
		d, w := binary.Varint(buf)
		if w <= 0 || len(buf) < w+8 {
			return nil, errSeriesCorrupt
		}
		step += d
		out[i] = session.Point{Step: step, Value: math.Float64frombits(binary.LittleEndian.Uint64(buf[w:]))}
		buf = buf[w+8:]
	}
	if len(buf) != 0 {
		return nil, errSeriesCorrupt
	}
	return out, nil
}

// PutSeries replaces the series of key.
func (d *DB) PutSeries(ctx context.Context, key session.SeriesKey, points []session.Point) error {
	ref := session.TrialRef{Number: key.Number, Rung: key.Rung}
	return d.PutSeriesBatch(ctx, key.SessionID, ref, map[string][]session.Point{key.Tag: points})
}

// PutSeriesBatch replaces the series of every tag in series for one trial in one
// transaction; tags not in series are kept. Each tag is stored on its own: one that cannot
// name a curve (session.TagProblem) or that bbolt refuses is left out, quoted by a short
// prefix in the returned error, and the others are stored all the same (issue 36: one empty
// tag used to drop every curve of the trial).
func (d *DB) PutSeriesBatch(ctx context.Context, sessionID string, ref session.TrialRef, series map[string][]session.Point) error {
	if sessionID == "" {
		return fmt.Errorf("storing series of %s: empty session id", ref)
	}
	var refused []error
	// Encoding outside the transaction keeps the writer lock short.
	packed := make(map[string][]byte, len(series))
	for tag, pts := range series {
		if p := session.TagProblem(tag); p != "" {
			refused = append(refused, fmt.Errorf("series %s of %s of session %s not stored: its tag is %s", session.QuoteShort(tag), ref, sessionID, p))
			continue
		}
		packed[tag] = encodeSeries(pts)
	}
	if len(packed) == 0 {
		return errors.Join(refused...)
	}
	err := d.update(ctx, func(tx *bolt.Tx) error {
		s, err := subCreate(tx, bucketSeries, sessionID)
		if err != nil {
			return err
		}
		b, err := s.CreateBucketIfNotExists(trialKey(ref))
		if err != nil {
			return fmt.Errorf("storing series of %s of session %s: %w", ref, sessionID, err)
		}
		for tag, buf := range packed {
			if err := b.Put(d.name(tag), buf); err != nil {
				refused = append(refused, fmt.Errorf("series %s of %s of session %s not stored: %w", session.QuoteShort(tag), ref, sessionID, err))
			}
		}
		return nil
	})
	return errors.Join(append([]error{err}, refused...)...)
}

// Series returns the series of key, or an error wrapping session.ErrNotFound.
func (d *DB) Series(ctx context.Context, key session.SeriesKey) ([]session.Point, error) {
	var out []session.Point
	ref := session.TrialRef{Number: key.Number, Rung: key.Rung}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var buf []byte
		if s := sub(tx, bucketSeries, key.SessionID); s != nil {
			if b := s.Bucket(trialKey(ref)); b != nil {
				buf = b.Get([]byte(key.Tag))
			}
		}
		if buf == nil {
			return fmt.Errorf("series %s of %s of session %s: %w", key.Tag, ref, key.SessionID, session.ErrNotFound)
		}
		var err error
		if out, err = decodeSeries(buf); err != nil {
			return fmt.Errorf("reading series %s of %s of session %s: %w", key.Tag, ref, key.SessionID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// trialSeries is the bucket of a trial's series, nil when the trial has none.
func trialSeries(tx *bolt.Tx, sessionID string, ref session.TrialRef) *bolt.Bucket {
	s := sub(tx, bucketSeries, sessionID)
	if s == nil {
		return nil
	}
	return s.Bucket(trialKey(ref))
}

// SeriesTags lists the tags stored for a trial in byte order; a trial without series has none.
func (d *DB) SeriesTags(ctx context.Context, sessionID string, ref session.TrialRef) ([]string, error) {
	var out []string
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := trialSeries(tx, sessionID, ref)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SeriesTagsPage lists at most limit of the tags stored for a trial that sort after after,
// in byte order, reading from a cursor placed there: a page of a trial's tags costs the
// page, not the trial's whole list.
func (d *DB) SeriesTagsPage(ctx context.Context, sessionID string, ref session.TrialRef, after string, limit int) ([]string, error) {
	out := []string{}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := trialSeries(tx, sessionID, ref)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, _ := c.Seek([]byte(after))
		if k != nil && after != "" && string(k) == after {
			k, _ = c.Next()
		}
		for ; k != nil && len(out) < limit; k, _ = c.Next() {
			out = append(out, string(k))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PruneSeries thins every curve of session sessionID to at most points points with LTTB
// (session.Downsample), or drops them all when points is 0, in one transaction; with
// dryRun it only measures. It returns the bytes the curves took before and take after
// (retention, docs/design.md §7). The file keeps its size until it is compacted.
func (d *DB) PruneSeries(ctx context.Context, sessionID string, points int, dryRun bool) (before, after int64, err error) {
	if points < 0 {
		return 0, 0, fmt.Errorf("pruning the curves of session %s: %d points", sessionID, points)
	}
	fn := func(tx *bolt.Tx) error {
		s := sub(tx, bucketSeries, sessionID)
		if s == nil {
			return nil
		}
		puts, b, a, err := thinSeries(s, sessionID, points)
		before, after = b, a
		if err != nil || dryRun {
			return err
		}
		return writeThinned(tx, sessionID, points, puts)
	}
	if dryRun {
		err = d.view(ctx, fn)
	} else {
		err = d.update(ctx, fn)
	}
	if err != nil {
		return 0, 0, err
	}
	return before, after, nil
}

// thinnedSeries is one series' thinned points, to be written once the walk has ended
// (bbolt forbids writes while a cursor walks the bucket).
type thinnedSeries struct {
	b        *bolt.Bucket
	tag, buf []byte
}

// thinSeries walks every series of a session's curves bucket s and returns those longer
// than points, thinned to points (none when points is 0: the curves are dropped whole), with
// the bytes the curves take before and after.
func thinSeries(s *bolt.Bucket, sessionID string, points int) (puts []thinnedSeries, before, after int64, err error) {
	err = s.ForEach(func(trial, _ []byte) error {
		b := s.Bucket(trial)
		if b == nil {
			return nil
		}
		return b.ForEach(func(tag, v []byte) error {
			before += int64(len(v))
			if points == 0 {
				return nil
			}
			pts, err := decodeSeries(v)
			if err != nil {
				return fmt.Errorf("reading series %s of session %s: %w", tag, sessionID, err)
			}
			if len(pts) <= points {
				after += int64(len(v))
				return nil
			}
			buf := encodeSeries(session.Downsample(pts, points))
			after += int64(len(buf))
			puts = append(puts, thinnedSeries{b, bytes.Clone(tag), buf})
			return nil
		})
	})
	return puts, before, after, err
}

// writeThinned drops a session's curves (points 0) or writes their thinned series.
func writeThinned(tx *bolt.Tx, sessionID string, points int, puts []thinnedSeries) error {
	if points == 0 {
		if err := tx.Bucket(bucketSeries).DeleteBucket([]byte(sessionID)); err != nil {
			return fmt.Errorf("dropping the curves of session %s: %w", sessionID, err)
		}
		return nil
	}
	for _, p := range puts {
		if err := p.b.Put(p.tag, p.buf); err != nil {
			return fmt.Errorf("thinning series %s of session %s: %w", p.tag, sessionID, err)
		}
	}
	return nil
}
