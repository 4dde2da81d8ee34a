// Package mjlab holds tunebot's trainer adapter for mjlab + RSL-RL velocity tasks. The
// adapter is Python (tunebot_mjlab, run as `python -m tunebot_mjlab`); this Go package
// builds a reward space from a task's own reward terms (`tunebot space`, with the table of
// mjlab's reward functions the sampler's prior comes from) and carries the end-to-end test
// against a real `tunebot tune` session. See README.md.
package mjlab
