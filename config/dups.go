package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// duplicateKeys names every key that one mapping below n sets twice, and drops all but its
// last setting from the tree. The decoder reads no mapping that holds a duplicate, so one
// at the top of the file would leave every other value unread and its problems unnamed
// (issue 28); with the duplicate named, the rest is read and checked as usual.
func duplicateKeys(n *yaml.Node, path string) []string {
	var probs []string
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			probs = append(probs, duplicateKeys(c, path)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			probs = append(probs, duplicateKeys(c, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case yaml.MappingNode:
		first := map[string]*yaml.Node{} // each key's first setting
		last := map[string]int{}         // and the index of its last
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if f, ok := first[k.Value]; ok {
				probs = append(probs, fmt.Sprintf("line %d: %s is set twice (first on line %d); set each key once in its section", k.Line, joinKey(path, k.Value), f.Line))
			} else {
				first[k.Value] = k
			}
			last[k.Value] = i
		}
		if len(probs) > 0 {
			kept := n.Content[:0:0]
			for i := 0; i+1 < len(n.Content); i += 2 {
				if last[n.Content[i].Value] == i {
					kept = append(kept, n.Content[i], n.Content[i+1])
				}
			}
			n.Content = kept
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			probs = append(probs, duplicateKeys(n.Content[i+1], joinKey(path, n.Content[i].Value))...)
		}
	}
	return probs
}
