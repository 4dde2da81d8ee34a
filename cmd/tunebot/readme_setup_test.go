package main

import (
	"os"
	"strings"
	"testing"
)

// The README's set-up block is what a newcomer runs first: the two commands its heading
// promises, the line of make test saying it downloads the mjlab venv and how long it takes,
// and a quick offline check named right after (issue 28 item 16, issue 35 item 9).
func TestReadmeSetupSaysWhatMakeTestCosts(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "## Set-up: two commands")
	_, block, _ := strings.Cut(section, "```sh\n")
	block, after, _ := strings.Cut(block, "```\n\n")
	var makeTest string
	commands := 0
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		commands++
		if strings.HasPrefix(l, "make test ") {
			makeTest = l
		}
	}
	// Issue 35 item 9: "two commands" lists two.
	if commands != 2 {
		t.Errorf("the set-up block under \"two commands\" has %d commands:\n%s", commands, block)
	}
	if makeTest == "" || strings.Contains(makeTest, "no network") || !strings.Contains(makeTest, "3 GB") || !strings.Contains(makeTest, "min") {
		t.Errorf("the set-up block's make test line is %q; want what it downloads (about 3 GB) and how long it takes, never \"no network\"", makeTest)
	}
	first, _, _ := strings.Cut(after, "\n\n")
	if !strings.Contains(first, "`go test ./...`") || !strings.Contains(first, "offline") {
		t.Errorf("the paragraph after the set-up block names no quick offline check (go test ./...):\n%s", first)
	}
}
