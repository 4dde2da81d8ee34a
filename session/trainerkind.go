package session

// Which kind of trainer made a preset (Preset.Trainer), so that a configuration tuned on the
// built-in sim is never applied to a real trainer checkout by mistake (docs/design.md §8).
const (
	TrainerSim     = "sim"     // the built-in sim trainer (tunebot sim-train): no robot learned anything
	TrainerMjlab   = "mjlab"   // the mjlab adapter (python -m tunebot_mjlab)
	TrainerCommand = "command" // any other trainer command
)

// TimeLabel names what a session's GPUSeconds measure: "CPU time" for the built-in sim, which
// trains on the CPU, "GPU time" for any other trainer (its jobs hold GPUs, each counted).
func (s Session) TimeLabel() string {
	if s.Trainer == TrainerSim {
		return "CPU time"
	}
	return "GPU time"
}

// TrainerText says in words which trainer made p: "the built-in sim", "mjlab", ...; "" when
// the preset does not say (imported, or saved before tunebot recorded it).
func TrainerText(kind string) string {
	switch kind {
	case TrainerSim:
		return "the built-in sim (not a real trainer)"
	case TrainerMjlab:
		return "mjlab"
	case TrainerCommand:
		return "a trainer command"
	}
	return ""
}
