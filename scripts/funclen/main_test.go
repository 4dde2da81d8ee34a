package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIsProduct(t *testing.T) {
	tests := []struct {
		file string
		want bool
	}{
		{"session/loop.go", true},
		{"cmd/tunebot/main.go", true},
		{"trainer/sim/sim.go", true},
		{"session/loop_test.go", false},
		{"bench/sampler/main.go", false},
		{"bench/internal/memsim/memsim.go", false},
		{"bot/slack/slacktest/slacktest.go", false},
		{"bot/discord/discordtest/fake.go", false},
		{"trainer/slurm/slurmtest/cluster.go", false},
		{"dashboard/browsertest/browsertest.go", false},
		{"dashboard/page.go", true},
		{"attest/attest.go", false}, // a directory ending in "test" is a fake, whatever its name
		{"benchmarks/x.go", true},
	}
	for _, tt := range tests {
		if got := isProduct(tt.file); got != tt.want {
			t.Errorf("isProduct(%q) = %v, want %v", tt.file, got, tt.want)
		}
	}
}

func TestLengths(t *testing.T) {
	src := `package p

// doc comments do not count
func one() {}

func three() {
	_ = 1
}

type T[K comparable] struct{}

func (t *T[K]) method(
	a int,
) int {
	return a
}

func (T[K]) value() {
}

func declared() int

var lit = func() {
	_ = 2
}
`
	got, err := lengths("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []fn{{"p.go", "one", 1}, {"p.go", "three", 3}, {"p.go", "T.method", 5}, {"p.go", "T.value", 2}}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(fn{})); d != "" {
		t.Errorf("lengths (-want +got):\n%s", d)
	}
	if _, err := lengths("bad.go", []byte("package p\nfunc {")); err == nil {
		t.Error("a file that does not parse gave no error")
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		long, over int
		want       bool
	}{
		{0, 0, true},
		{30, 0, true},
		{31, 0, false},
		{30, 1, false},
		{5, 1, false},
	}
	for _, tt := range tests {
		if got := within(tt.long, tt.over); got != tt.want {
			t.Errorf("within(%d over %d, %d over %d) = %v, want %v", tt.long, longLines, tt.over, maxLines, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	fns := []fn{{lines: 60}, {lines: 61}, {lines: 80}, {lines: 81}, {lines: 200}}
	if long, over := count(fns); long != 4 || over != 2 {
		t.Errorf("count = %d over %d, %d over %d; want 4 and 2", long, longLines, over, maxLines)
	}
}
