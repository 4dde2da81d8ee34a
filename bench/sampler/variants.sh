#!/usr/bin/env bash
# Search V's variants of tunebot's sampler (README.md, "Search V"), on the tuning surfaces
# (dev seeds 1-40 of the five families, never the held-out ones), one session each, paired
# with the defaults on the same surface and noise: "tunebot − variant-x" is how much the
# defaults are ahead of variant x. The defaults were chosen by the worst family's median here.
# Env: FIRST (1), SURFACES (40), WORKERS (2), FAMILIES (the five).
set -euo pipefail
cd "$(dirname "$0")/../.."
FIRST=${FIRST:-1}
SURFACES=${SURFACES:-40}
WORKERS=${WORKERS:-2}
FAMILIES=${FAMILIES:-generic domain coupled separable levers}
OUT=bench/out/sampler-variants
TMP=/dev/shm
[ -d "$TMP" ] && [ -w "$TMP" ] || TMP=""
mkdir -p "$OUT"
go build -o bench/out/sampler ./bench/sampler/
variants=(
	"no-screen:-screen -1"
	"screen-pass-0.6:-screen-pass 0.6"
	"screen-third:-screen 0.34"
	"no-slow-near-bound:-near-bound -1"
	"flat-prior:-no-declarations"
)
files=()
for fam in $FAMILIES; do
	args=(-family "$fam" -first "$FIRST" -surfaces "$SURFACES" -reps 1 -workers "$WORKERS")
	[ -n "$TMP" ] && args+=(-tmp "$TMP")
	bench/out/sampler sessions -method tunebot "${args[@]}" > "$OUT/$fam-tunebot.jsonl"
	files+=("$OUT/$fam-tunebot.jsonl")
	for v in "${variants[@]}"; do
		name=${v%%:*}
		# shellcheck disable=SC2086 # the variant's flags are words
		bench/out/sampler sessions -method tunebot -label "variant-$name" ${v#*:} "${args[@]}" > "$OUT/$fam-$name.jsonl"
		files+=("$OUT/$fam-$name.jsonl")
	done
done
echo "tuning surfaces $FIRST..$((FIRST + SURFACES - 1)), one session each: tunebot's defaults against each variant"
bench/out/sampler summary "${files[@]}"
