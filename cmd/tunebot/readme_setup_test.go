package main

import (
	"os"
	"strings"
	"testing"
)

// The README's set-up block is what a newcomer runs first: the line of make test says it
// downloads the mjlab venv and how long it takes, and a quick offline check stands beside
// it (issue 28, item 16).
func TestReadmeSetupSaysWhatMakeTestCosts(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(b), "## Set-up")
	block, _, _ = strings.Cut(block, "```\n\n")
	var makeTest, goTest string
	for _, l := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(l, "make test "):
			makeTest = l
		case strings.HasPrefix(l, "go test ./... "):
			goTest = l
		}
	}
	if makeTest == "" || strings.Contains(makeTest, "no network") || !strings.Contains(makeTest, "3 GB") || !strings.Contains(makeTest, "min") {
		t.Errorf("the set-up block's make test line is %q; want what it downloads (about 3 GB) and how long it takes, never \"no network\"", makeTest)
	}
	if goTest == "" || !strings.Contains(goTest, "offline") {
		t.Errorf("the set-up block names no quick offline check (go test ./...) beside make test:\n%s", block)
	}
}
