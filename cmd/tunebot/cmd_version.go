package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3". Without it the
// VCS revision Go records in the binary is used.
var version = ""

func init() {
	register("version", "print tunebot's version and the Go version it was built with", runVersion)
}

func runVersion(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "version", "usage: tunebot version\n\nPrints tunebot's version and the Go version it was built with.")
	if code, ok := parseFlags(e, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(e.stdout, "tunebot %s\n%s %s/%s\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// versionString is the -X version, else the VCS revision (marked -dirty when the tree had
// changes), else the module version, else "dev".
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionFromBuildInfo(bi)
}

func versionFromBuildInfo(bi *debug.BuildInfo) string {
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
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return rev + dirty
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}
