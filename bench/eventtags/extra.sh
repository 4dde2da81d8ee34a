#!/usr/bin/env bash
# make bench: issue 36's event-file attack (400 tags of 256 KiB from a trainer): tunebot's
# peak RSS on a sim session under attack against the same session without it.
set -euo pipefail
cd "$(dirname "$0")/../.."
go build -o bench/out/eventtags ./bench/eventtags
bench/out/eventtags -bin "${BIN:-bin/tunebot}"
