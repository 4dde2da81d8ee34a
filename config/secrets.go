package config

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"tunebot/secret"
)

// expansion is what ${NAME} expansion did to the scalars of a parsed config file.
type expansion struct {
	raw     map[*yaml.Node]string   // each expanded scalar's text as written
	secrets map[*yaml.Node][]string // the secret variables each one names, set or not
	unset   map[*yaml.Node][]string // the variables each one names that are not set
}

func newExpansion() expansion {
	return expansion{raw: map[*yaml.Node]string{}, secrets: map[*yaml.Node][]string{}, unset: map[*yaml.Node][]string{}}
}

// unsetNodes is the set of scalars that name an unset variable: their types are not checked.
func (x expansion) unsetNodes() map[*yaml.Node]bool {
	out := map[*yaml.Node]bool{}
	for n := range x.unset {
		out[n] = true
	}
	return out
}

// knownSecrets returns tunebot's secrets by name, as Load's getenv sees them (with
// systemd credentials) and as this process's environment holds them (every SLACK_*).
func knownSecrets(getenv func(string) string) map[string]string {
	known := secret.Known(os.Environ(), "")
	for _, n := range secret.Names {
		if v := getenv(n); v != "" {
			known[n] = v
		}
	}
	return known
}

// secretSinks say where the values of a section (or key) go, for the problem that names a
// secret in one. The first that holds a key decides; every other value is sent, stored or
// shown somewhere too (secretElsewhere): a URL or an ntfy topic goes on the wire, a model
// name into every advisor request and the audit.
var secretSinks = []struct{ prefix, where string }{
	{"trainer", "on the trainer's command line, where any user of the machine sees it (ps) and the trial's log keeps it"},
	{"executor.slurm.sbatch_args", "on sbatch's command line and into every batch script, where the cluster's users see it"},
	{"executor.slurm", "into every batch script's #SBATCH lines, which the cluster keeps and shows its users (scontrol show job)"},
	{"executor.ray", "into every Ray job's record, which the head keeps and shows its users (ray job list, the dashboard)"},
	{"apply.test", "on the command line of apply's test, where any user of the machine sees it (ps)"},
	{"apply", "into the branches and commits apply writes"},
	{"session", "into the settings every session stores and shows in chat and on the page, and (run_name, task) onto the trainer's command line and into the preset names"},
	{"reward_space", "into the reward space every session stores, shows in chat and sends to the advisor"},
	{"reward_spaces", "into the reward space every session of its task stores, shows in chat and sends to the advisor"},
	{"advisor", "into every request to the advisor and the audit every reader of the page sees"},
	{"chat", "into the requests tunebot sends to chat and push services (a topic or URL travels in the clear to the server and its logs)"},
}

// secretElsewhere is where a value of no sink goes.
const secretElsewhere = "into what tunebot sends, stores or shows (requests, the audit, the page)"

const secretFix = "tunebot's secrets come from the environment for tunebot alone: remove it, and give the trainer or tool that needs one what it needs another way"

// secretSink says where the value at path goes.
func secretSink(path string) string {
	for _, s := range secretSinks {
		if path == s.prefix || strings.HasPrefix(path, s.prefix+".") || strings.HasPrefix(path, s.prefix+"[") {
			return s.where
		}
	}
	return secretElsewhere
}

// namesItsSetting reports whether a scalar is the one place a variable may go: a Slack
// setting of chat.slack written as ${SLACK_…} whole (chat.slack.channel: ${SLACK_CHANNEL}).
// Such a variable counts as a secret only by its prefix, so that no subprocess sees it;
// the credentials tunebot reads itself (secret.Names) have no key of the config at all.
func namesItsSetting(u nodeUse, raw string, name string) bool {
	return strings.HasPrefix(u.path, "chat.slack.") && !u.key && raw == "${"+name+"}" &&
		strings.HasPrefix(name, "SLACK_") && !slices.Contains(secret.Names, name)
}

// secretsInConfig names every string of the configuration that names one of tunebot's
// secret variables (set or not) or holds a secret's value, however it got there (a
// variable that copies it, the value pasted in): every key and value, as the decoder reads
// the file, after YAML aliases and merge keys and after ${NAME} expansion (x). The one
// exception is a Slack setting naming its own variable (namesItsSetting). Each problem
// names the key and its line, never the value. A space file is scanned by it too, with
// an empty expansion.
func secretsInConfig(root *yaml.Node, x expansion, known map[string]string) []string {
	uses := nodeUses(root)
	probs := taggedValues(uses)
	said := map[string]bool{}
	for _, u := range uses {
		for _, m := range secretProblems(u, x, known) {
			if !said[m] {
				said[m] = true
				probs = append(probs, m)
			}
		}
	}
	return probs
}

// plainTags are the tags a value may carry: those under which the decoder keeps a value's
// text as written, which is what the secret scan reads.
var plainTags = []string{"!!str", "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq"}

// taggedValues refuses every value or key written with a tag other than plainTags, naming
// its key and line. A tag makes the decoder keep something other than the text: !!binary
// keeps the base64's decoding, so a secret written as base64 would pass a scan of the text
// and come out whole (issue 44). Refusing them, rather than decoding each tag as the
// decoder does before the scan, keeps the scan reading what the decoder keeps by
// construction: no setting needs bytes, a timestamp or a tag of its own. Each node is
// named once, where it is written (its first use).
func taggedValues(uses []nodeUse) []string {
	var probs []string
	seen := map[*yaml.Node]bool{}
	for _, u := range uses {
		n := u.node
		if seen[n] {
			continue
		}
		seen[n] = true
		if n.Style&yaml.TaggedStyle != 0 && !slices.Contains(plainTags, n.ShortTag()) {
			what := cmp.Or(u.path, "the file")
			if u.key {
				what += " (a key of it)"
			}
			probs = append(probs, fmt.Sprintf("line %d: %s: the tag %s is not accepted: tunebot scans the text of the file for its secrets, and a tagged value is kept decoded (!!binary's base64 would hide one); write the value plainly (tags accepted: %s)",
				n.Line, what, n.Tag, strings.Join(plainTags, ", ")))
		}
	}
	return probs
}

// secretProblems names the secrets one scalar names or holds.
func secretProblems(u nodeUse, x expansion, known map[string]string) []string {
	if u.node.Kind != yaml.ScalarNode {
		return nil
	}
	where := secretSink(u.path)
	what := cmp.Or(u.path, "the file")
	if u.key {
		what += " (a key of it)"
	}
	via := ""
	if u.line != u.node.Line {
		via = fmt.Sprintf(" (written on line %d, used here through a YAML alias)", u.node.Line)
	}
	var msgs []string
	for _, name := range x.secrets[u.node] {
		if !namesItsSetting(u, x.raw[u.node], name) {
			msgs = append(msgs, fmt.Sprintf("line %d: %s: ${%s}%s would put the secret %s %s; %s", u.line, what, name, via, name, where, secretFix))
		}
	}
	if len(msgs) > 0 {
		return msgs
	}
	if name := secret.Holds(u.node.Value, known); name != "" && !namesItsSetting(u, x.raw[u.node], name) {
		msgs = append(msgs, fmt.Sprintf("line %d: %s: holds the value of the secret %s%s, which would put it %s; %s", u.line, what, name, via, where, secretFix))
	}
	return msgs
}

// unsetProblems names each value that names an unset variable, with its line and key.
func unsetProblems(root *yaml.Node, x expansion) []string {
	var probs []string
	said := map[*yaml.Node]bool{}
	for _, u := range scalarUses(root) {
		names := x.unset[u.node]
		if len(names) == 0 || said[u.node] {
			continue
		}
		said[u.node] = true
		what := "environment variable " + names[0] + " is not set"
		if len(names) > 1 {
			what = "environment variables " + strings.Join(names, ", ") + " are not set"
		}
		probs = append(probs, fmt.Sprintf("line %d: %s: %s", u.node.Line, cmp.Or(u.path, "the file"), what))
	}
	return probs
}

// nodeUse is one place the decoder reads a node of the file: its dotted key path, and the
// line that puts it there (the alias's, when it came through one). A key of a mapping is a
// use too (key): its path is the mapping's, since the key itself may be a secret.
type nodeUse struct {
	node *yaml.Node
	path string
	line int
	key  bool
}

// aliasBudget bounds every walk of the tree that follows aliases and merge keys
// (nodeUses, treeWalk): aliases of aliases can make a small file name a value millions
// of times, and the decoder refuses such a file anyway.
const aliasBudget = 1 << 16

// nodeUses lists every node of the file where the decoder reads it, keys (and what a key
// holds) and values, collections and scalars, following aliases and merge keys: a value
// written once and used twice is listed twice, first where it is written (an anchor comes
// before its aliases, and the walk goes in the order of the file). The budget is spent
// only through aliases: every node as written is listed, however long the file, so a long
// list cannot push a secret past the scan.
func nodeUses(root *yaml.Node) []nodeUse {
	var out []nodeUse
	budget := aliasBudget
	var walk func(n *yaml.Node, path string, via, depth int, key bool)
	walk = func(n *yaml.Node, path string, via, depth int, key bool) {
		if n == nil || depth > 100 { // an alias inside its own anchor goes no deeper
			return
		}
		if via > 0 {
			if budget <= 0 {
				return
			}
			budget--
		}
		if n.Kind == yaml.AliasNode {
			walk(n.Alias, path, n.Line, depth+1, key)
			return
		}
		out = append(out, nodeUse{node: n, path: path, line: cmp.Or(via, n.Line), key: key})
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path, via, depth+1, false)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i), via, depth+1, false)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				walk(k, path, via, depth+1, true)
				if isMergeKey(k) {
					walk(v, path, via, depth+1, false) // an alias or a sequence of them, read as this mapping's
					continue
				}
				walk(v, joinKey(path, k.Value), via, depth+1, false)
			}
		}
	}
	walk(root, "", 0, 0, false)
	return out
}

// scalarUses are the scalars of nodeUses: the strings the decoder reads.
func scalarUses(root *yaml.Node) []nodeUse {
	var out []nodeUse
	for _, u := range nodeUses(root) {
		if u.node.Kind == yaml.ScalarNode {
			out = append(out, u)
		}
	}
	return out
}

// hideExpanded rewrites problems so that none shows a value ${NAME} expansion put in the
// file: a problem about an expanded value shows it as written ("${TASK}"). A variable may
// hold a secret, and config check's output goes to terminals, CI logs and chat. A problem
// is about a value when it names the value's key (or one inside or around it) or its line.
func hideExpanded(probs []string, root *yaml.Node, x expansion) []string {
	type shown struct {
		path        string
		lines       [2]int
		value, raw  string
		alwaysHides bool // a secret's value, hidden in every problem
	}
	var all []shown
	for _, u := range scalarUses(root) {
		if raw, ok := x.raw[u.node]; ok && u.node.Value != "" {
			all = append(all, shown{path: u.path, lines: [2]int{u.line, u.node.Line}, value: u.node.Value, raw: raw,
				alwaysHides: len(x.secrets[u.node]) > 0 && len(u.node.Value) >= 3})
		}
	}
	out := make([]string, len(probs))
	for i, p := range probs {
		prefix, rest := "", p
		line := 0
		if m := problemLine.FindStringSubmatch(p); m != nil {
			prefix, rest = m[0], p[len(m[0]):]
			line, _ = strconv.Atoi(m[1])
		}
		key, _, _ := strings.Cut(rest, ": ")
		key, _, _ = strings.Cut(key, " ")
		for _, s := range all {
			if s.alwaysHides || line > 0 && (line == s.lines[0] || line == s.lines[1]) || pathsMeet(key, s.path) {
				rest = replaceValue(rest, s.value, s.raw)
			}
		}
		out[i] = prefix + rest
	}
	return out
}

// hideSecrets masks every secret's value left in probs: a key path, a file name or a
// decoder's message may quote a string that holds one (a key pasted from a token).
func hideSecrets(probs []string, getenv func(string) string) []string {
	x := secret.NewRedactor(slices.Collect(maps.Values(knownSecrets(getenv)))...)
	out := make([]string, len(probs))
	for i, p := range probs {
		out[i] = x.String(p)
	}
	return out
}

// pathsMeet reports whether one dotted key path is the other or inside it.
func pathsMeet(a, b string) bool {
	inside := func(a, b string) bool {
		return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(a, b+"[")
	}
	return a != "" && b != "" && (inside(a, b) || inside(b, a))
}

// replaceValue replaces, in one pass, value in s by raw: quoted as Go quotes it (%q, as
// the problems quote values), else where it stands as a word of its own.
func replaceValue(s, value, raw string) string {
	quoted, quotedRaw := strconv.Quote(value), strconv.Quote(raw)
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], quoted):
			b.WriteString(quotedRaw)
			i += len(quoted)
		case strings.HasPrefix(s[i:], value) && (i == 0 || !wordByte(s[i-1]) || !wordByte(value[0])) &&
			(i+len(value) == len(s) || !wordByte(s[i+len(value)]) || !wordByte(value[len(value)-1])):
			b.WriteString(raw)
			i += len(value)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
