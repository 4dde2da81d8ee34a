package main

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// outline is the README's sketch of a JSON document: each key, with the keys of its object
// (or of its array's objects) when the README lists them, nil for a leaf.
type outline map[string]outline

var outlineToken = regexp.MustCompile(`"[^"]*"|[{}\[\]:,|]|null`)

// readmeOutline reads the outline of tune's --json summary from the README: the inline
// code that follows "With `--json` stdout is exactly one JSON document".
func readmeOutline(t *testing.T) outline {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "With `--json` stdout is exactly one JSON document")
	if !ok {
		t.Fatal("the README no longer describes --json")
	}
	_, rest, _ = strings.Cut(rest, "`{")
	code, _, _ := strings.Cut(rest, "}`")
	toks := outlineToken.FindAllString("{"+code+"}", -1)
	o, n := parseOutline(t, toks)
	if n != len(toks) {
		t.Fatalf("the README's outline has trailing tokens %v", toks[n:])
	}
	return o
}

func parseOutline(t *testing.T, toks []string) (outline, int) {
	t.Helper()
	if len(toks) == 0 || toks[0] != "{" {
		t.Fatalf("outline: want {, got %v", toks)
	}
	o, i := outline{}, 1
	for i < len(toks) && toks[i] != "}" {
		key := strings.Trim(toks[i], `"`)
		i++
		o[key] = nil
		if i < len(toks) && toks[i] == ":" {
			i++
			array := toks[i] == "["
			if array {
				i++
			}
			sub, n := parseOutline(t, toks[i:])
			o[key], i = sub, i+n
			if array {
				i++ // ]
			}
			if i+1 < len(toks) && toks[i] == "|" && toks[i+1] == "null" {
				i += 2
			}
		}
		if i < len(toks) && toks[i] == "," {
			i++
		}
	}
	return o, i + 1
}

// matchOutline reports where the document v differs from the outline o: missing or extra
// keys, at any depth the outline describes.
func matchOutline(path string, o outline, v any) []string {
	if v == nil {
		return nil // "| null"
	}
	if arr, ok := v.([]any); ok {
		var out []string
		for _, x := range arr {
			out = append(out, matchOutline(path+"[]", o, x)...)
		}
		return out
	}
	m, ok := v.(map[string]any)
	if !ok {
		return []string{path + ": not an object"}
	}
	var out []string
	for k, sub := range o {
		x, ok := m[k]
		if !ok {
			out = append(out, path+"."+k+": in the README, not in the output")
			continue
		}
		if sub != nil {
			out = append(out, matchOutline(path+"."+k, sub, x)...)
		}
	}
	for k := range m {
		if _, ok := o[k]; !ok {
			out = append(out, path+"."+k+": in the output, not in the README")
		}
	}
	sort.Strings(out)
	return out
}

// checkReadmeOutline compares the --json summary on stdout with the README's outline of it
// (issue 20, item 15: final was missing on best and control, and edited came and went).
func checkReadmeOutline(t *testing.T, stdout string) {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if diff := matchOutline("summary", readmeOutline(t), doc); len(diff) > 0 {
		t.Errorf("the README's outline of --json and the output differ:\n%s", strings.Join(diff, "\n"))
	}
}
