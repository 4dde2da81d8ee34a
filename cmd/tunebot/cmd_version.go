package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version and commit are set at build time (make build: -ldflags "-X main.version=$(git
// describe --tags --dirty) -X main.commit=$(git rev-parse HEAD)"). Without version the module
// version Go records in the binary is used; the commit comes from Go's VCS stamp
// (vcs.revision) when it recorded one, else from commit: Go records none with
// -buildvcs=false or where it cannot read the checkout.
var (
	version = ""
	commit  = ""
)

func init() {
	register("version", "print tunebot's version, its commit and the Go version it was built with", runVersion)
}

func runVersion(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "version", "usage: tunebot version\n\nPrints tunebot's module version, the commit it was built from and the Go version.")
	if code, ok := parseFlags(e, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(e.stdout, "tunebot %s\n%s %s/%s\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// versionString is the module version (the -X version when set) and the commit it was
// built from: "v0.3.1 (commit 0123456789ab-dirty)"; "devel" for a build outside a module
// version, "commit unknown" when Go recorded no VCS revision.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return versionFromBuildInfo(bi, version, commit)
}

// versionFromBuildInfo says bi's module version (or set, the -X version) and commit: Go's
// vcs.revision, else stamped (the -X commit, "-dirty" already on it when it applies).
func versionFromBuildInfo(bi *debug.BuildInfo, set, stamped string) string {
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	v := set
	if v == "" {
		v = bi.Main.Version
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if rev == "" {
		rev, dirty, _ = strings.Cut(stamped, "-")
		if dirty != "" {
			dirty = "-" + dirty
		}
	}
	if rev == "" {
		return v + " (commit unknown)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return v + " (commit " + rev + dirty + ")"
}
