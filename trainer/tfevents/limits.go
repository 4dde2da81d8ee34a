package tfevents

import (
	"hash/maphash"
	"slices"

	"tunebot/session"
)

// Limits bound what one Reader takes from the event files it reads (a trial's run
// directory): a buggy or hostile trainer can write an event file of 200,000 tags, and every
// tag kept becomes a series in memory, a key in the store and a line of the page's tag list
// (issue 27). Zero means no bound. Set them before the first read.
type Limits struct {
	// MaxTags bounds the distinct tags kept over all files: the first MaxTags seen are
	// kept, and the scalars of any later tag are dropped.
	MaxTags int
	// MaxBytes bounds the bytes read over all files: no file is read past the point where
	// the total would exceed it.
	MaxBytes int64
}

// Cut says what Limits have left out so far; the zero Cut means nothing.
type Cut struct {
	Tags      int   // distinct tags dropped (at least; counting stops at maxCounted)
	Scalars   int64 // scalars of the dropped tags
	Bytes     int64 // bytes of event files left unread, as of the last read of each
	TagsAbove bool  // Tags reached maxCounted: there were more
	// Refused are the tags no curve may carry (session.TagProblem: empty, not UTF-8, over
	// session.MaxTagBytes), dropped whatever the limits, one by one; the rest are kept.
	Refused RefusedTags
}

// RefusedTags counts the tags a Reader refused as names of curves. None of them is held:
// a tag of 256 KiB is counted by a hash of it, and Examples quote short prefixes.
type RefusedTags struct {
	Tags     int      // distinct refused tags (at least; counting stops at maxCounted)
	Scalars  int64    // their scalars
	Examples []string // up to maxExamples, each session.QuoteShort'ed with its problem
}

// maxCounted bounds the dropped tags a Reader remembers in order to count them.
const maxCounted = 10_000

// maxExamples bounds the refused tags RefusedTags quotes.
const maxExamples = 3

// Cut reports what the Reader's Limits have left out so far.
func (r *Reader) Cut() Cut {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Cut{Tags: len(r.lim.dropped), Scalars: r.lim.scalars, TagsAbove: len(r.lim.dropped) >= maxCounted}
	c.Refused = RefusedTags{Tags: len(r.lim.refused), Scalars: r.lim.refusedScalars, Examples: slices.Clone(r.lim.examples)}
	for _, n := range r.lim.unread {
		c.Bytes += n
	}
	return c
}

// limitState is what a Reader keeps to apply its Limits; callers hold r.mu.
type limitState struct {
	kept    map[string]struct{} // tags admitted under MaxTags
	dropped map[string]struct{} // tags refused, up to maxCounted
	scalars int64               // scalars of refused tags
	read    int64               // bytes read over all files, for MaxBytes
	unread  map[string]int64    // per file, the bytes MaxBytes left unread

	refused        map[uint64]struct{} // hashes of the tags refused as names, up to maxCounted
	refusedScalars int64
	examples       []string
	seed           maphash.Seed
}

// admit reports whether the scalars of tag are kept: a tag no curve may carry never is,
// nor one past MaxTags; it counts those that are not. It is asked once per tag a read meets
// (and for each scalar of a refused one), so its map lookups are off the hot path.
func (r *Reader) admit(tag []byte) bool {
	// The length first, so a long refused tag is never copied (once per scalar of it).
	if len(tag) == 0 || len(tag) > session.MaxTagBytes || session.TagProblem(string(tag)) != "" {
		r.refuse(tag)
		return false
	}
	if !r.underMaxTags(tag) {
		r.drop(tag)
		return false
	}
	return true
}

// refuse counts one scalar of a tag that cannot name a curve, without keeping the tag: a
// hash of it tells a new one, and the first few are quoted by a short prefix.
func (r *Reader) refuse(tag []byte) {
	r.lim.refusedScalars++
	if len(r.lim.refused) >= maxCounted {
		return
	}
	if r.lim.refused == nil {
		r.lim.refused = map[uint64]struct{}{}
		r.lim.seed = maphash.MakeSeed()
	}
	h := maphash.Bytes(r.lim.seed, tag)
	if _, ok := r.lim.refused[h]; ok {
		return
	}
	r.lim.refused[h] = struct{}{}
	if len(r.lim.examples) < maxExamples {
		r.lim.examples = append(r.lim.examples, refusedExample(tag))
	}
}

// refusedExample quotes a refused tag by a short prefix (session.QuoteShort), with its
// problem. At most maxExamples tags are quoted, so converting each whole costs little.
func refusedExample(tag []byte) string {
	return session.QuoteShort(string(tag)) + ": " + session.TagProblem(string(tag))
}

// underMaxTags reports whether tag is kept under MaxTags, admitting it when there is room.
func (r *Reader) underMaxTags(tag []byte) bool {
	if r.Limits.MaxTags <= 0 {
		return true
	}
	if _, ok := r.lim.kept[string(tag)]; ok {
		return true
	}
	if len(r.lim.kept) < r.Limits.MaxTags {
		if r.lim.kept == nil {
			r.lim.kept = map[string]struct{}{}
		}
		r.lim.kept[string(tag)] = struct{}{}
		return true
	}
	return false
}

// drop counts one scalar of a tag admit refused.
func (r *Reader) drop(tag []byte) {
	r.lim.scalars++
	if _, ok := r.lim.dropped[string(tag)]; ok || len(r.lim.dropped) >= maxCounted {
		return
	}
	if r.lim.dropped == nil {
		r.lim.dropped = map[string]struct{}{}
	}
	r.lim.dropped[string(tag)] = struct{}{}
}

// readEnd returns the offset up to which path, of size bytes and read up to start, may be
// read under MaxBytes.
func (r *Reader) readEnd(start, size int64) int64 {
	if r.Limits.MaxBytes <= 0 {
		return size
	}
	return min(size, start+max(r.Limits.MaxBytes-r.lim.read, 0))
}

// readTo counts the bytes a read of path took, from start to pos, and, when MaxBytes
// stopped it at end short of size, what it left unread.
func (r *Reader) readTo(path string, start, pos, end, size int64) {
	r.lim.read += pos - start
	if end >= size {
		delete(r.lim.unread, path)
		return
	}
	if r.lim.unread == nil {
		r.lim.unread = map[string]int64{}
	}
	r.lim.unread[path] = size - pos
}
