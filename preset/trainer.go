package preset

import "tunebot/session"

// CheckApplicable refuses to apply a preset the built-in sim trainer made unless fromSim:
// the sim's response surface is made up, and its presets carry the real task's name, so one
// could reach a real trainer checkout by mistake (docs/design.md §8). A preset from another
// trainer, imported, or saved before the trainer was recorded is applicable.
func CheckApplicable(p session.Preset, fromSim bool) error {
	if p.Trainer != session.TrainerSim || fromSim {
		return nil
	}
	task := ""
	if p.Task != "" {
		task = " (its task, " + p.Task + ", is only the name the sim was given)"
	}
	return session.Userf(session.ErrConflict, "preset %s was trained on the built-in sim trainer, not by a real trainer%s, so it is refused here; "+
		"to apply it anyway: tunebot apply %s --from-sim --yes", p.Name, task, p.Name)
}

// CheckConfirmed refuses to apply a preset whose gain was not shown to clear the noise (its
// session ended within the noise, or unmeasured: session.Unconfirmed) unless acknowledged:
// such a preset may be no better than what the checkout holds, and a careful user commits it
// only knowingly (docs/design.md §8). Every other preset is applicable.
func CheckConfirmed(p session.Preset, acknowledged bool) error {
	if !p.Unconfirmed() || acknowledged {
		return nil
	}
	why := "its gain over its session's baseline is within the noise"
	if p.Outcome == session.OutcomeUnmeasured {
		why = "its gain was not measured at equal training on fresh seeds"
	}
	if d := p.Verdict; d != nil {
		why += " (" + d.Text() + ")"
	}
	return session.Userf(session.ErrConflict, "preset %s is not an improvement anyone has shown: %s, so it is refused here; "+
		"to apply it knowingly: tunebot apply %s --unconfirmed --yes", p.Name, why, p.Name)
}

// SimMade says what a preset of the built-in sim trainer is wherever one is applied (the
// commit message, the command's output): its scores came from the sim's made-up surface.
const SimMade = "made on tunebot's built-in sim trainer: its scores are the sim's, not a robot's"

// SimSubject follows the subject of a sim preset's apply commit, so that a one-line log of
// the trainer's history says it too.
const SimSubject = " (built-in sim, not a robot)"
