# tunebot: `make demo` runs a whole tuning session on the built-in sim trainer;
# `make test` runs the test suite. See README.md.

GO      ?= go
BIN     := bin/tunebot
PKGS    := ./...
# The core must stay free of SDKs, bbolt, go-chart and os/exec (STYLE.md).
FORBIDDEN_IN_SESSION := slack-go|discordgo|go-openai|bbolt|go-chart|os/exec

.PHONY: build demo test lint bench deps-check clean

build:
	$(GO) build -o $(BIN) ./cmd/tunebot

demo: build
	./$(BIN) demo

deps-check:
	@leak=$$($(GO) list -deps ./session | grep -E '$(FORBIDDEN_IN_SESSION)' || true); \
	if [ -n "$$leak" ]; then echo "session/ must not depend on: $$leak"; exit 1; fi

lint: deps-check
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test: lint
	$(GO) test -count=1 $(PKGS)

bench: build
	bash bench/run.sh

clean:
	rm -rf bin data bench/out
