package slack

import (
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// replayWindow is how far a request's timestamp may be from now for its signature to
// verify (slack-go's SecretsVerifier, either way): a signature seen once can only be
// replayed within it, so it is remembered that long and no longer.
const replayWindow = 5 * time.Minute

// maxSignatures bounds the signatures remembered: about 6 MiB, and more requests in ten
// minutes than a chat channel sends in a month. When it is full of signatures still in
// their window, new requests are refused rather than a replay let through.
const maxSignatures = 1 << 16

// signatureKey is what a verified request's signature is remembered by: its bytes, not the
// header's text. The header is hex, which decodes the same in upper or lower case (and
// slack-go verifies either), so keyed on the text a captured request with its hex
// upper-cased would verify, miss the memory and run again.
func signatureKey(header string) string {
	b, err := hex.DecodeString(strings.TrimPrefix(header, "v0="))
	if err != nil {
		return header // not reached: only a verified signature is remembered
	}
	return string(b)
}

// signatures remembers the signatures of the verified requests of the replay window, so
// that a signed request captured on the way (a proxy log, a TLS-terminating middlebox) and
// sent again is dropped instead of run twice.
type signatures struct {
	mu    sync.Mutex
	seen  map[string]time.Time // signature → the request's timestamp
	swept time.Time
	max   int
}

// admit reports whether the request signed sig with timestamp at is new, and remembers it;
// full reports that it was refused because memory is full of signatures still in their window.
func (s *signatures) admit(sig string, at, now time.Time) (ok, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]time.Time{}
	}
	if s.max <= 0 {
		s.max = maxSignatures
	}
	if _, dup := s.seen[sig]; dup {
		return false, false
	}
	if len(s.seen) >= s.max || now.Sub(s.swept) > replayWindow {
		s.expire(now)
	}
	if len(s.seen) >= s.max {
		return false, true
	}
	s.seen[sig] = at
	return true, false
}

// expire forgets the signatures whose requests no longer verify: stamped more than the
// window before now.
func (s *signatures) expire(now time.Time) {
	for sig, at := range s.seen {
		if now.Sub(at) > replayWindow {
			delete(s.seen, sig)
		}
	}
	s.swept = now
}

func (s *signatures) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}
