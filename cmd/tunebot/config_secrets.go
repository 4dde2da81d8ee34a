package main

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"tunebot/secret"
)

// argvSections are the config values that become a command line: every trainer template
// (and its python), sbatch's extra options and apply's test command.
var argvSections = []struct {
	section []string // a mapping
	key     string   // one of its keys; "" for all of them
}{
	{[]string{"trainer"}, ""},
	{[]string{"executor", "slurm"}, "sbatch_args"},
	{[]string{"apply"}, "test"},
}

// secretsInArgv names each ${NAME} of one of tunebot's secrets in a value that becomes a
// command line. Expanded there, the secret would be in every process listing (ps shows any
// user the argv), in the sbatch script, and in the trial's train.log, which records the
// command; and the trainer is meant never to see tunebot's secrets at all.
func secretsInArgv(root *yaml.Node) []string {
	var probs []string
	for _, s := range argvSections {
		m := mappingAt(root, s.section...)
		if m == nil {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i].Value; s.key == "" || k == s.key {
				probs = append(probs, secretRefs(m.Content[i+1], strings.Join(s.section, ".")+"."+k)...)
			}
		}
	}
	return probs
}

// secretRefs names the secret variables referenced in the scalars of n, at path.
func secretRefs(n *yaml.Node, path string) []string {
	var probs []string
	switch n.Kind {
	case yaml.ScalarNode:
		for _, m := range envRef.FindAllStringSubmatch(n.Value, -1) {
			if secret.IsEnv(m[1]) {
				probs = append(probs, fmt.Sprintf("line %d: %s: ${%s} would put the secret %s on the command line, where any user of the machine sees it (ps) and the trial's log keeps it; tunebot's secrets never reach the trainer: remove it, and give the trainer what it needs another way",
					n.Line, path, m[1], m[1]))
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			probs = append(probs, secretRefs(c, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			probs = append(probs, secretRefs(n.Content[i+1], path+"."+n.Content[i].Value)...)
		}
	}
	return probs
}
