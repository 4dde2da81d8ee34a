package slack

import (
	"fmt"
	"testing"
	"time"
)

// TestSignaturesExpireAndStayBounded: a signature is refused again only within its window,
// is forgotten after it, and a memory full of live signatures refuses rather than forgets.
func TestSignaturesExpireAndStayBounded(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	s := signatures{max: 4}
	if ok, _ := s.admit("a", t0, t0); !ok {
		t.Fatal("first a refused")
	}
	if ok, full := s.admit("a", t0, t0.Add(4*time.Minute)); ok || full {
		t.Errorf("a again within the window: ok %v full %v, want a replay", ok, full)
	}
	for i := range 3 {
		if ok, _ := s.admit(fmt.Sprint("b", i), t0.Add(time.Minute), t0.Add(time.Minute)); !ok {
			t.Fatalf("b%d refused", i)
		}
	}
	if ok, full := s.admit("c", t0.Add(2*time.Minute), t0.Add(2*time.Minute)); ok || !full {
		t.Errorf("a fifth live signature: ok %v full %v, want refused as full", ok, full)
	}
	// Past a's window (it would no longer verify), a is forgotten and makes room.
	later := t0.Add(replayWindow + time.Second)
	if ok, full := s.admit("c", later, later); !ok || full {
		t.Errorf("c after a expired: ok %v full %v", ok, full)
	}
	if n := s.len(); n != 4 {
		t.Errorf("%d remembered, want b0-b2 and c", n)
	}
	// A while later everything has expired: the memory does not grow with time.
	muchLater := later.Add(time.Hour)
	if ok, _ := s.admit("d", muchLater, muchLater); !ok {
		t.Fatal("d refused")
	}
	if n := s.len(); n != 1 {
		t.Errorf("%d remembered an hour later, want only d", n)
	}
}
