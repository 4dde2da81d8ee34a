// Package session is tunebot's core: what a tuning session is and how it runs, free of every
// outside dependency (no chat SDK, no bbolt, no charts, no subprocesses; `make deps-check`
// keeps it so).
//
// It holds the domain (Session, Trial, Proposal, Preset and their states), the reward space and
// the rules every patch obeys (space.go, patch.go, docs/design.md §2), the fixed score and its
// gates (score.go, §3), the session settings and their limits (settings.go, §1), and the Engine
// that runs the loop of §1: baseline, proposals, approval, successive halving, final
// re-evaluation, preset (engine.go for the public calls, loop.go for one step of the loop).
//
// What the core needs from outside is a set of small interfaces in ports.go (a Store, a
// Trainer, an Advisor, a Notifier); cmd/tunebot wires the implementations in store/, trainer/,
// advisor/ and bot/. Every state change is written through the Store before it is announced,
// so a crash leaves a session that Recover and Resume continue without running a trial twice.
package session
