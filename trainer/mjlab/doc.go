// Package mjlab holds tunebot's trainer adapter for mjlab + RSL-RL velocity tasks. The
// adapter is Python (tunebot_mjlab, run as `python -m tunebot_mjlab`); this Go package
// only carries its end-to-end test against a real `tunebot tune` session. See README.md.
package mjlab
