// Command funclen counts the long functions of tunebot's product code (docs/design.md §9: a
// function reads as its steps). It prints how many are over 60 and over 80 lines and the
// longest ten, and exits 1 when any is over 80 or more than 30 are over 60; -report only
// prints. Run it from the repository's top: go run ./scripts/funclen.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
)

// The limits: no product function over maxLines, at most maxLong over longLines.
const (
	longLines = 60
	maxLines  = 80
	maxLong   = 30
)

// fn is one function and its length in lines, from "func" to its closing brace.
type fn struct {
	file, name string
	lines      int
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("funclen", flag.ContinueOnError)
	flags.SetOutput(stderr)
	report := flags.Bool("report", false, "print the counts only; never fail")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	files, err := trackedGo()
	if err != nil {
		fmt.Fprintln(stderr, "funclen:", err)
		return 2
	}
	var fns []fn
	for _, f := range files {
		if !isProduct(f) {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(stderr, "funclen:", err)
			return 2
		}
		got, err := lengths(f, src)
		if err != nil {
			fmt.Fprintln(stderr, "funclen:", err)
			return 2
		}
		fns = append(fns, got...)
	}
	ok := show(stdout, fns)
	if !ok && !*report {
		return 1
	}
	return 0
}

// trackedGo lists the Go files git tracks, from the repository's top.
func trackedGo() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "--", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the tracked Go files (run from the repository's top): %w", err)
	}
	return strings.Fields(string(out)), nil
}

// isProduct says whether a tracked Go file is product code: not a test, not a benchmark
// (bench/), not a test fake (a directory whose name ends in "test", such as
// bot/slack/slacktest, or dashboard/browsertest, the browser driver of the page's tests).
func isProduct(file string) bool {
	if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(file, "bench/") {
		return false
	}
	dir := path.Dir(file)
	for _, d := range strings.Split(dir, "/") {
		if strings.HasSuffix(d, "test") {
			return false
		}
	}
	return true
}

// lengths measures every function with a body in one file's source.
func lengths(file string, src []byte) ([]fn, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []fn
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		out = append(out, fn{file: file, name: funcName(fd), lines: lines})
	}
	return out, nil
}

// funcName is a function's name, a method's with its receiver's type: Runner.run.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// show writes the counts and the longest ten, and says whether the limits hold.
func show(w io.Writer, fns []fn) bool {
	slices.SortFunc(fns, func(a, b fn) int {
		return cmp.Or(b.lines-a.lines, strings.Compare(a.file, b.file), strings.Compare(a.name, b.name))
	})
	long, over := count(fns)
	fmt.Fprintf(w, "product functions over %d lines: %d (at most %d)\n", longLines, long, maxLong)
	fmt.Fprintf(w, "product functions over %d lines: %d (none allowed)\n", maxLines, over)
	fmt.Fprintln(w, "longest:")
	for _, f := range fns[:min(10, len(fns))] {
		fmt.Fprintf(w, "%5d  %s  %s\n", f.lines, f.file, f.name)
	}
	return within(long, over)
}

// count is how many functions are over longLines and over maxLines.
func count(fns []fn) (long, over int) {
	for _, f := range fns {
		if f.lines > longLines {
			long++
		}
		if f.lines > maxLines {
			over++
		}
	}
	return long, over
}

// within says whether the counts keep the limits: none over maxLines, at most maxLong
// over longLines.
func within(long, over int) bool { return over == 0 && long <= maxLong }
