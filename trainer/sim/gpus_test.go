package sim_test

import (
	"strings"
	"testing"

	"tunebot/trainer/sim"
)

func TestAGPUIsHeldByOneJobAtATime(t *testing.T) {
	dir := t.TempDir()
	r1, err := sim.HoldGPUs(dir, "0,1", "job-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.HoldGPUs(dir, "1,2", "job-b"); err == nil || !strings.Contains(err.Error(), "GPU 1 is already held by job-a") {
		t.Fatalf("got %v, want GPU 1 named as held by job-a", err)
	}
	r2, err := sim.HoldGPUs(dir, "2", "job-c") // job-b gave back GPU 2 when it failed
	if err != nil {
		t.Fatal(err)
	}
	r1()
	r3, err := sim.HoldGPUs(dir, "1", "job-d")
	if err != nil {
		t.Fatal(err)
	}
	r2()
	r3()
	if peak, err := sim.PeakHolders(dir); err != nil || peak != 2 {
		t.Errorf("peak %d (%v), want 2", peak, err)
	}
}
