# tunebot: `make demo` runs a whole tuning session on the built-in sim trainer;
# `make test` runs the test suite. See README.md.

GO      ?= go
BIN     := bin/tunebot
PKGS    := ./...
# The core must stay free of SDKs, bbolt, go-chart and os/exec (docs/design.md §9).
FORBIDDEN_IN_SESSION := slack-go|discordgo|go-openai|bbolt|go-chart|os/exec
# Chat owns its ports' types; storage, charts, cron and git are wired in cmd/tunebot.
FORBIDDEN_IN_BOT := go.etcd.io/bbolt|go-chart|robfig/cron|^tunebot/(apply|store|charts|schedule)$$
# The store keeps its own schedule record: no scheduler, no cron.
FORBIDDEN_IN_STORE := robfig/cron|^tunebot/schedule$$

.PHONY: build demo test test-mjlab lint funclen bench deps-check clean

# The version and commit `tunebot version` says, stamped whether or not Go records its own
# VCS stamp (it records none with -buildvcs=false, or where it cannot read the checkout).
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tunebot

# make demo TASK=Mjlab-Velocity-Flat-Unitree-G1 tunes that task's checked-in reward space on
# the sim trainer; SPACE=FILE a space `tunebot space --task TASK` printed (no mjlab needed).
demo: build
	./$(BIN) demo $(if $(TASK),--task $(TASK)) $(if $(SPACE),--space $(SPACE))

deps-check:
	@leak=$$($(GO) list -deps ./session | grep -E '$(FORBIDDEN_IN_SESSION)' || true); \
	if [ -n "$$leak" ]; then echo "session/ must not depend on: $$leak"; exit 1; fi
	@fail=0; for p in $$($(GO) list ./bot/...); do \
		leak=$$($(GO) list -deps $$p | grep -E '$(FORBIDDEN_IN_BOT)' | tr '\n' ' '); \
		if [ -n "$$leak" ]; then echo "$$p must not depend on: $$leak(bot owns its ports' types; wire implementations in cmd/tunebot)"; fail=1; fi; \
	done; exit $$fail
	@leak=$$($(GO) list -deps ./store | grep -E '$(FORBIDDEN_IN_STORE)' | tr '\n' ' '); \
	if [ -n "$$leak" ]; then echo "store/ must not depend on: $$leak(it keeps its own Schedule record)"; exit 1; fi
	@users=$$($(GO) list -f '{{.ImportPath}} {{join .Imports " "}}' ./... | awk '{for (i = 2; i <= NF; i++) if ($$i == "tunebot/config") print $$1}' | grep -vx 'tunebot/cmd/tunebot' | tr '\n' ' '); \
	if [ -n "$$users" ]; then echo "only cmd/tunebot may import tunebot/config, not: $$users"; exit 1; fi

# staticcheck at a pinned version, fetched through the module proxy like every dependency.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: deps-check
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	@$(GO) run ./scripts/funclen

# Long functions of the product code (docs/design.md §9): fails when one is over 80 lines or
# more than 30 are over 60, printing the counts and the longest ten (`make lint` runs it).
funclen:
	@$(GO) run ./scripts/funclen

# The fast Go suite first, so a broken build shows in seconds; the slow mjlab suite after it.
test: lint
	$(GO) test -count=1 $(PKGS)
	$(MAKE) --no-print-directory test-mjlab

# The mjlab adapter for real: builds (or reuses, keyed by its requirements' hash) the venv in
# .venv/mjlab, runs its pytest suite (Go1 training, resume, evaluation and its clip on CPU; a
# G1 session of two trials, each trained, evaluated and clipped)
# and a whole `tunebot tune` session against it (trainer/mjlab/e2e_test.go, skipped by plain
# go test). The adapter renders clips with OSMesa here (no GPU), so MUJOCO_GL is left to it.
test-mjlab:
	@venv=$$(bash scripts/mjlab-venv.sh) && \
	(cd trainer/mjlab && env -u MUJOCO_GL CUDA_VISIBLE_DEVICES= WANDB_MODE=disabled $$venv/bin/python -m pytest -q -p no:cacheprovider tests) && \
	env -u MUJOCO_GL TUNEBOT_MJLAB_VENV=$$venv $(GO) test -count=1 -timeout 60m -v -run TestTuneSessionWithRealMjlab ./trainer/mjlab/

bench: build
	bash bench/run.sh

clean:
	rm -rf bin data bench/out
