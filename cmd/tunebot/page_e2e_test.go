package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
)

// pageConfig is a sim session with more trials than a palette of ten colours: twelve at
// rung 0 (the baseline among them) and those promoted.
const pageConfig = `
session:
  trial_count: 12
  rungs: [20, 40, 60]
  early_stop_patience: 12
`

// TestPageAtAGlance drives the page in headless Chromium over a finished session whose run
// directories were pruned (issue 28): the session opens under the short id printed
// everywhere; each clip says it was removed by prune (no broken image) and the compare view
// offers none; the curves page has one compact legend, a colour per trial that no other
// trial in a chart shares, trials picked by rung, tag names whole and the metrics table
// uncut.
func TestPageAtAGlance(t *testing.T) {
	chromium, shots := needChromium(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf("data_dir: %s\nservice: {addr: %q}\n", data, addr)+pageConfig)
	id := tuned(t, cfg, 1)[0]
	age(t, data, id, 200)
	if code, out, errOut := runPruneBin(t, "--config", cfg, "--keep-last", "0", "--curves", "keep", "--run-dirs", "--compact=false"); code != 0 {
		t.Fatalf("prune: exit %d\n%s%s", code, out, errOut)
	}
	startDaemon(t, cfg)
	link := dashboardLink(t, cfg)
	base := "http://" + addr

	b := startBrowser(t, chromium)
	b.navigate(link)
	b.waitJS("the sign-in button", `!!document.querySelector("#signin")`)
	b.eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`) // it navigates
	b.waitJS("the sessions page", `location.pathname === "/" && !!document.querySelector("#sessions tbody tr")`)

	// the short id printed everywhere opens the session, and the address becomes its whole id
	b.navigate(base + "/sessions/" + session.Short(id))
	b.waitJS("the leaderboard", `!!document.querySelector("#leaderboard tbody tr")`)
	if got := b.evalString(`location.pathname`); got != "/sessions/"+id {
		t.Errorf("the short id's page is at %s", got)
	}
	b.screenshot(filepath.Join(shots, "page-session.png"))
	// the leaderboard's marks are explained
	if got := b.evalString(`(document.querySelector("#board-key") || {}).textContent || ""`); !strings.Contains(got, "★") || !strings.Contains(got, "(pN)") {
		t.Errorf("the leaderboard's key: %q", got)
	}
	// every clip the prune removed says so; no image is left to break, none to compare
	if got := b.evalString(`[document.querySelectorAll("#leaderboard tbody tr").length, document.querySelectorAll("#leaderboard .clip-removed").length,
		[...document.querySelectorAll("#leaderboard .clip-removed")].every((e) => e.textContent === "clip removed by prune"),
		document.querySelectorAll("img").length, document.querySelectorAll("#clips select option").length,
		document.querySelector("#clips").textContent.includes("removed by prune")].join(" ")`); !prunedOK(got) {
		t.Errorf("rows, clips said removed, all in those words, images, compare choices, compare says removed: %s", got)
	}
	b.navigate(base + "/sessions/" + id + "/curves")
	b.waitJS("the curves", `Number(document.body.dataset.charts || 0) > 0`)
	b.screenshot(filepath.Join(shots, "page-curves.png"))
	// the metrics carry the display names the terminal and the charts use
	if got := b.evalString(`[...document.querySelectorAll("#eval-table th")].map((e) => e.textContent).join("|")`); !strings.Contains(got, "|"+session.MetricLabel(session.MetricVelLinear)+"|") {
		t.Errorf("the metrics table's heads: %s", got)
	}
	// one compact legend, not one per chart taller than its plot
	if got := b.evalString(`const lg = document.querySelector("#curves-legend"), plot = document.querySelector(".chart canvas");
		[document.querySelectorAll(".chart .u-legend").length, lg ? lg.querySelectorAll(".legend-item").length : 0, lg ? lg.offsetHeight : -1, plot.offsetHeight].join(" ")`); !legendOK(got, 11) {
		t.Errorf("legends per chart, shared legend's entries, its height, a plot's height: %s; want none per chart and one legend of every trial (more than 10), shorter than a plot", got)
	}
	// a colour per trial: none repeats, though there are more than ten
	if got := b.evalString(`const cs = [...document.querySelectorAll("#curves-legend .swatch")].map((s) => getComputedStyle(s).backgroundColor); cs.length + " " + new Set(cs).size`); !sameCount(got) {
		t.Errorf("legend swatches, distinct colours: %s", got)
	}
	// tag names whole (wrapped, not cut), in the list and over the charts
	if cut := b.evalString(`[...document.querySelectorAll(".tag-pick, .chart h3")].filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent).join(", ")`); cut != "" {
		t.Errorf("tag names cut: %s", cut)
	}
	// the metrics table whole: inside its column and the window, no scroll of its own
	if got := b.evalString(`const tb = document.querySelector("#eval-table"), col = document.querySelector("#eval-metrics");
		[Math.round(tb.getBoundingClientRect().right), Math.round(col.getBoundingClientRect().right), window.innerWidth, document.documentElement.scrollWidth].join(" ")`); !tableInside(got) {
		t.Errorf("metrics table's right edge, its column's, the window's width, the page's: %s", got)
	}
	// trials picked by rung: rung 1's button leaves rung 1's trials alone in the charts
	b.eval(`document.querySelector("#rung-1").click()`)
	b.waitJS("rung 1 alone", `(() => { const ids = [...document.querySelectorAll("#curves-legend .legend-item")].map((e) => e.dataset.trial);
		return ids.length > 1 && ids.every((id) => id.endsWith("@1")) && Number(document.body.dataset.charts) > 0 })()`)
	// the values at the cursor, in place of a legend per chart
	b.eval(`const o = document.querySelector(".chart .u-over"), r = o.getBoundingClientRect(), at = { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true };
		o.dispatchEvent(new MouseEvent("mouseenter", at)); o.dispatchEvent(new MouseEvent("mousemove", at))`)
	b.waitJS("the values at the cursor", `(() => { const tip = document.querySelector(".chart .tip"); return !!tip && !tip.hidden && tip.querySelectorAll("b").length > 1 })()`)
	b.screenshot(filepath.Join(shots, "page-curves-rung1.png"))
}

func legendOK(got string, min int) bool {
	var perChart, entries, height, plot int
	if _, err := fmt.Sscan(got, &perChart, &entries, &height, &plot); err != nil {
		return false
	}
	return perChart == 0 && entries >= min && height > 0 && height < plot
}

func sameCount(got string) bool {
	var n, distinct int
	_, err := fmt.Sscan(got, &n, &distinct)
	return err == nil && n > 10 && n == distinct
}

func tableInside(got string) bool {
	var right, col, win, page int
	_, err := fmt.Sscan(got, &right, &col, &win, &page)
	return err == nil && right <= col && col <= win && page <= win
}

func prunedOK(got string) bool {
	var rows, removed, images, choices int
	var words, says bool
	_, err := fmt.Sscan(got, &rows, &removed, &words, &images, &choices, &says)
	return err == nil && rows > 10 && removed == rows && words && images == 0 && choices == 0 && says
}
