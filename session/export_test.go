package session

// SetBeforeWorkerExit makes every worker of e call f when it has finished its steps and is
// about to unregister, so a test can land a decision in exactly that window. Set it before
// the engine starts any session.
func SetBeforeWorkerExit(e *Engine, f func(id string)) { e.beforeWorkerExit = f }

// NoImprovement exposes the early-stop count to the tests.
var NoImprovement = noImprovement

// RankForPromotion exposes the ranking halving promotes by.
var RankForPromotion = rankForPromotion

// SettingRuleFields lists the fields settingRules checks, in order.
func SettingRuleFields() []string {
	out := make([]string, len(settingRules))
	for i, r := range settingRules {
		out[i] = r.field
	}
	return out
}
