// tunebot's monitoring page: reads the daemon's JSON with the sign-in cookie (HttpOnly: no
// script sees it) and renders with DOM nodes only (text is never parsed as HTML).
"use strict";
(function () {
  const body = document.body;
  const page = body.dataset.page, pageName = body.dataset.name;
  let pageID = body.dataset.id; // the whole id once the server resolved a typed prefix
  // A metric's display name, from the table the server sends (session.MetricLabels).
  const metricLabel = (d, n) => (d.labels && d.labels.metrics && d.labels.metrics[n]) || n;
  const main = document.getElementById("main");
  const POLL_MS = 3000;

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
      else if (k === "value") el.value = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.append(kid instanceof Node ? kid : String(kid));
    }
    return el;
  }
  const signed = (v) => (v === null || v === undefined ? "—" : (v >= 0 ? "+" : "") + v.toFixed(3));
  const num = (v) => (v === null || v === undefined ? "—" : Number(v).toPrecision(4).replace(/\.?0+$/, "").replace(/\.?0+e/, "e"));
  const when = (s) => (s ? s.replace("T", " ").replace(/:\d\dZ$/, "Z") : "");
  const enc = encodeURIComponent;

  class NotSignedIn extends Error {}

  // loaded records, once, how long the page took from navigation to its first full
  // drawing (make bench reads it).
  function loaded() {
    if (!body.dataset.loadedMs) body.dataset.loadedMs = Math.round(performance.now());
  }

  async function getJSON(url) {
    const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    const data = await r.json().catch(() => ({}));
    if (r.status === 401) throw new NotSignedIn(data.hint || "not signed in");
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  async function postJSON(url, payload) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(payload || {}),
    });
    const data = await r.json().catch(() => ({ ok: false, text: r.statusText }));
    if (r.status === 401) throw new NotSignedIn(data.hint || "not signed in");
    if (data.error) return { ok: false, text: data.error };
    return data;
  }

  function showSignIn() {
    main.replaceChildren(h("section", { class: "card signin", id: "signin-hint" },
      h("h1", {}, "Not signed in"),
      h("p", {}, "The monitoring page shows nothing until you sign in with a one-time link."),
      h("p", {}, "In chat: ", h("code", {}, "/tune dashboard"), " (the answer is private). On the tunebot machine: ",
        h("code", {}, "tunebot dashboard link --config FILE"), ".")));
  }

  function fail(err) {
    if (err instanceof NotSignedIn) { showSignIn(); return true; }
    main.replaceChildren(h("p", { class: "error" }, "could not load: " + err.message));
    return true;
  }

  function flash(target, res) {
    target.replaceChildren(h("p", { class: res.ok ? "ok" : "error", role: "status" }, res.text || (res.ok ? "done" : "refused")));
  }

  async function loadMe() {
    try {
      const me = await getJSON("/api/me");
      document.getElementById("me").replaceChildren(
        h("span", { class: "muted" }, "signed in as " + me.name + " (" + me.platform + ") "),
        h("form", { method: "post", action: "/signout", class: "inline" }, h("button", { type: "submit" }, "sign out")));
      return me;
    } catch (e) { return null; }
  }

  // ---- sessions -------------------------------------------------------------------------
  async function sessionsPage(me) {
    const list = h("div", { id: "session-list" });
    // One page of sessions at a time, newest first; ?cursor= names an older page.
    const cursor = new URLSearchParams(location.search).get("cursor") || "";
    const refresh = async () => {
      const data = await getJSON("/api/sessions" + (cursor ? "?cursor=" + enc(cursor) : ""));
      const rows = data.sessions.map((s) => h("tr", { class: "state-" + s.state },
        h("td", {}, h("a", { href: "/sessions/" + enc(s.id) }, s.short)), h("td", {}, s.run_name),
        data.several_tasks ? h("td", {}, s.task) : null,
        h("td", {}, h("span", { class: "badge " + s.state }, s.state_label), s.outcome && s.outcome !== "improved" ? h("span", { class: "outcome muted", title: s.outcome_text }, " " + s.outcome) : null), h("td", {}, s.mode),
        h("td", { class: "r" }, s.trials_done + " / " + s.trials_planned),
        h("td", { class: "r" }, s.best_score === null ? "—" : s.best),
        h("td", {}, s.owner), h("td", {}, when(s.started)), h("td", {}, when(s.ended))));
      list.replaceChildren(rows.length ? h("table", { id: "sessions" }, h("thead", {}, h("tr", {}, ["session", "run"].concat(data.several_tasks ? ["task"] : [], ["state", "mode", "trials done/planned", "best", "owner", "started", "ended"]).map((c) => h("th", {}, c)))), h("tbody", {}, rows))
        : h("p", { class: "muted" }, "No sessions yet."));
      const nav = [];
      if (cursor) nav.push(h("a", { href: "/", id: "newest-sessions" }, "← newest sessions"));
      if (data.next) nav.push(h("a", { href: "/?cursor=" + enc(data.next), id: "older-sessions" }, "older sessions →"));
      if (nav.length) list.append(h("p", { class: "pager" }, ...nav.flatMap((a, i) => (i ? [" · ", a] : [a]))));
    };
    await refresh();
    const out = [h("h1", {}, "Sessions"), list];
    if (me && me.may.start) {
      const args = h("input", { id: "start-args", size: 50, placeholder: "mode=approval trials=8 (as /tune start)" });
      const msg = h("div");
      out.push(h("section", { class: "card" }, h("h2", {}, "Start a session"), args, " ",
        h("button", { class: "primary", id: "start", onclick: async () => { flash(msg, await postJSON("/api/start", { args: args.value })); refresh().catch(fail); } }, "Start"), msg));
    }
    const amsg = h("div");
    out.push(h("section", { class: "card" }, h("h2", {}, "Advisor"),
      h("button", { id: "agent", onclick: async () => { amsg.replaceChildren("testing…"); flash(amsg, await postJSON("/api/agent", {})); } }, "Test the advisor connection"), amsg));
    main.replaceChildren(...out);
    setInterval(() => refresh().catch(fail), POLL_MS);
  }

  // ---- one session ------------------------------------------------------------------------
  const sortState = { key: "rank", dir: -1 };
  let lastDecisionKey = "";

  async function sessionPage() {
    const sec = {
      head: h("section", { id: "head" }), decide: h("section", { id: "decide" }),
      review: h("section", { id: "review" }), prefer: h("section", { id: "prefer" }), board: h("section", { id: "board" }),
      clips: h("section", { id: "clips" }),
      ladder: h("section", { id: "ladder" }), compare: h("section", { id: "compare" }),
      proposals: h("section", { id: "proposals" }), audit: h("section", { id: "audit" }),
    };
    main.replaceChildren(...Object.values(sec));
    const picked = new URLSearchParams(location.search).get("trial");
    const refresh = async () => {
      const d = await getJSON("/api/sessions/" + enc(pageID));
      if (d.session.id !== pageID) { // typed as a prefix: show, and poll, the whole id
        pageID = d.session.id;
        history.replaceState(null, "", "/sessions/" + enc(pageID) + location.search);
      }
      renderHead(sec.head, d);
      renderDecide(sec.decide, d);
      renderReview(sec.review, d);
      renderPrefer(sec.prefer, d);
      renderBoard(sec.board, d, picked);
      renderClips(sec.clips, d);
      renderLadder(sec.ladder, d);
      renderCompare(sec.compare, d);
      renderProposals(sec.proposals, d);
      renderAudit(sec.audit, d);
      body.dataset.state = d.session.state;
      body.dataset.trials = d.trials.length;
    };
    await refresh();
    loaded();
    setInterval(() => refresh().catch(fail), POLL_MS);
  }

  function renderHead(el, d) {
    const s = d.session, msg = h("div", { id: "action-msg" });
    const act = (verb) => async () => flash(msg, await postJSON("/api/sessions/" + enc(s.id) + "/" + verb, {}));
    const buttons = [];
    if (d.may.pause && ["running", "evaluating", "awaiting_approval", "queued"].includes(s.state)) buttons.push(h("button", { id: "pause", onclick: act("pause") }, "Pause"));
    if (d.may.resume && ["paused", "interrupted"].includes(s.state)) buttons.push(h("button", { id: "resume", onclick: act("resume") }, "Resume"));
    if (d.may.cancel && !["cancelled", "failed", "succeeded"].includes(s.state)) buttons.push(h("button", { id: "cancel", class: "danger", onclick: act("cancel") }, "Cancel"));
    const old = el.querySelector("#action-msg");
    el.replaceChildren(...[
      h("h1", {}, "Session " + s.short + " ", h("span", { class: "badge " + s.state, id: "state" }, s.state_label)),
      h("p", {}, s.run_name + " · " + s.task + " · " + s.mode + " mode · trials " + s.trials_done + "/" + s.trials_planned +
        " · best " + s.best +
        " · started " + when(s.started) + (s.ended ? " · ended " + when(s.ended) : "")),
      s.outcome_line ? h("p", { id: "outcome" }, s.outcome_line) : null,
      s.built_on ? h("p", { id: "built-on" }, "builds on ", h("a", { href: "/sessions/" + enc(s.built_on.id) }, "session " + s.built_on.short), s.built_on.rest) : null,
      s.message ? h("p", { class: "muted", id: "message" }, s.message) : null,
      s.pruned ? h("p", { class: "muted", id: "pruned" }, s.pruned) : null,
      // each running trial on its own line: its GPUs or its Slurm job (issue 14)
      d.running.length ? h("div", { id: "running" }, h("p", {}, "running now (" + d.running.length + "):"),
        h("ul", {}, d.running.map((l) => h("li", {}, l)))) : null,
      s.reason ? h("p", { class: "error" }, s.reason) : null,
      h("p", {}, h("a", { href: "/sessions/" + enc(s.id) + "/curves", id: "curves-link" }, "curves →"), " ", ...buttons),
      old || msg].filter(Boolean)); // replaceChildren would print a null
  }

  function diffTable(caption, diff) {
    return h("table", { class: "diff" }, h("caption", {}, caption),
      h("thead", {}, h("tr", {}, ["term", "old", "new", "×"].map((c) => h("th", {}, c)))),
      h("tbody", {}, diff.map((c) => h("tr", {}, h("td", {}, c.label),
        h("td", { class: "r del" }, num(c.old)), h("td", { class: "r add" }, num(c.new)), h("td", { class: "r" }, c.factor)))));
  }

  // Every proposal that waits gets its own card and buttons: with parallel trials several
  // may wait at once (issue 14). A card is kept across polls while its proposal waits, so
  // what a person types survives; element ids carry the proposal's number when several wait
  // ("approve-4"), and stay "approve", "reject", "edit" with one.
  const decideCards = new Map();
  function renderDecide(el, d) {
    const pending = d.proposals.filter((x) => x.state === "pending").sort((a, b) => a.seq - b.seq);
    const multi = pending.length > 1;
    const key = pending.map((p) => p.id).join(",") + (multi ? "+" : "");
    if (key === lastDecisionKey) return; // keep what a person is typing across polls
    lastDecisionKey = key;
    const cards = pending.map((p) => {
      const k = p.id + (multi ? "+" : "");
      if (!decideCards.has(k)) decideCards.set(k, decideCard(d, p, multi ? "-" + p.seq : ""));
      return decideCards.get(k);
    });
    for (const k of [...decideCards.keys()]) if (!cards.includes(decideCards.get(k))) decideCards.delete(k);
    if (multi) cards.unshift(h("h2", { id: "decide-count" }, pending.length + " proposals wait for a decision"));
    el.replaceChildren(...cards);
  }

  function decideCard(d, p, sfx) {
    const msg = h("div", { id: "decide-msg" + sfx });
    const base = "/api/sessions/" + enc(d.session.id) + "/proposals/" + enc(p.id) + "/";
    const parts = [h("h2", {}, "Waiting for a decision: proposal " + p.seq + " for trial " + p.number),
      diffTable("proposed change (patch of trial " + p.base_trial + ")", p.diff),
      why(p), msg];
    if (d.may.decide) {
      const feedback = h("textarea", { id: "feedback" + sfx, rows: 2, cols: 60,
        placeholder: "what should change? “keep is_terminated, lower foot_slip” binds every proposer; " +
          (d.advised ? "the rest reaches only DeepSeek's next prompt" : "the rest is recorded (no advisor is configured, so no prompt reads it)") });
      const lines = p.edit_text.split("\n").filter((l) => l.trim() !== "");
      while (lines.length < 4) lines.push("");
      const inputs = lines.map((l, i) => h("input", { class: "edit-line", id: "edit" + sfx + "-" + i, value: l, size: 40 }));
      const errs = inputs.map(() => h("span", { class: "field-error" }));
      parts.push(
        h("div", { class: "buttons" },
          h("button", { class: "primary", id: "approve" + sfx, onclick: async () => flash(msg, await postJSON(base + "approve")) }, "Approve")),
        h("details", {}, h("summary", {}, "Reject with feedback"), feedback, " ",
          h("button", { class: "danger", id: "reject" + sfx, onclick: async () => flash(msg, await postJSON(base + "reject", { feedback: feedback.value })) }, "Reject")),
        h("details", {}, h("summary", {}, "Edit, then approve"),
          h("p", { class: "muted" }, "one term=value per line; term=0 switches a term off; at most 4 changes"),
          inputs.map((inp, i) => h("div", {}, inp, " ", errs[i])),
          h("button", { id: "edit" + sfx, onclick: async () => {
            errs.forEach((e) => e.replaceChildren());
            const res = await postJSON(base + "edit", { patch: inputs.map((x) => x.value).filter((v) => v.trim() !== "").join("\n") });
            flash(msg, res);
            // Per-field errors come for the submitted lines; map them back to the inputs.
            const used = inputs.filter((x) => x.value.trim() !== "");
            for (const [i, text] of Object.entries(res.fields || {})) {
              const at = inputs.indexOf(used[Number(i)] || inputs[0]);
              errs[at].replaceChildren(text);
            }
          } }, "Save and approve")));
    } else {
      parts.push(h("p", { class: "muted" }, "You may read this session; deciding needs the decide permission in tunebot's allow-list."));
    }
    return h("div", { class: "card pending", "data-proposal": String(p.seq) }, ...parts);
  }

  // ---- people's judgement (issue 23) -----------------------------------------------------
  // The A/B card that waits: both trials' clips side by side, A · B · Can't tell and a note;
  // kept across polls while it waits, so a note being typed survives. Below it, every answer
  // so far with who gave it and what it does.
  let preferKey = "", preferCard = null;
  function renderPrefer(el, d) {
    const c = d.card;
    const key = (c ? "card " + c.seq : "") + "|" + d.preferences.map((p) => p.seq + p.verdict + p.note).join(",");
    if (key === preferKey) return;
    preferKey = key;
    if (!c) preferCard = null;
    else if (!preferCard || preferCard.dataset.card !== String(c.seq)) preferCard = preferenceCard(d, c);
    const list = d.preferences.length ? h("div", { id: "preferences" }, h("h2", {}, "Preferences"),
      h("ul", {}, d.preferences.map((p) => h("li", { "data-seq": String(p.seq) }, p.verdict +
        (p.by ? " (" + p.by + ", " + p.platform + ", " + when(p.at) + ")" : "") + (p.note ? ": “" + p.note + "”" : ""),
        p.effect ? h("div", { class: "muted" }, p.effect) : null)))) : null;
    el.replaceChildren(...[preferCard, list].filter(Boolean));
  }

  function preferenceCard(d, c) {
    const msg = h("div", { id: "prefer-msg" });
    const side = (t, label) => h("div", { class: "clip-side", "data-trial": t.number + "@" + t.rung },
      h("h3", {}, label + ": trial " + t.number + " · " + versusText(t)),
      t.clip ? clipPlayer(t.clip, { width: 360, autoplay: true }) : h("p", { class: "muted" }, "no clip: " + (t.clip_note || "the trainer wrote none") + " (see its curves)"));
    const parts = [h("h2", {}, "Which walks better? A: trial " + c.a + " · B: trial " + c.b),
      h("p", { class: "muted", id: "prefer-why" }, (c.why || "A just finished; B is the best so far") + ". The score cannot see a hopping or shuffling gait; you can."),
      h("div", { class: "clip-compare" }, c.trials.map((t, i) => side(t, "AB"[i])))];
    if (d.may.decide) {
      const note = h("input", { id: "prefer-note", size: 60, placeholder: d.advised ? "why (optional): DeepSeek reads it" : "why (optional): recorded with your answer (no advisor is configured, so no prompt reads it)" });
      const answer = (a) => async () => flash(msg, await postJSON("/api/sessions/" + enc(d.session.id) + "/prefer", { card: String(c.seq), answer: a, note: note.value }));
      parts.push(h("div", { class: "buttons" },
        h("button", { class: "primary", id: "prefer-a", onclick: answer("a") }, "A: trial " + c.a), " ",
        h("button", { class: "primary", id: "prefer-b", onclick: answer("b") }, "B: trial " + c.b), " ",
        h("button", { id: "prefer-tie", onclick: answer("tie") }, "Can't tell")), note);
    } else {
      parts.push(h("p", { class: "muted" }, "Answering needs the decide permission in tunebot's allow-list."));
    }
    parts.push(msg);
    return h("div", { class: "card pending", id: "prefer-card", "data-card": String(c.seq) }, ...parts);
  }

  // The promotion plan that waits for people: Go, or promote / drop a trial by number.
  let reviewKey = "", reviewMsg = h("div", { id: "review-msg" });
  function renderReview(el, d) {
    const r = d.review;
    const key = r ? r.rung + ":" + r.plan.map((p) => p.number).join(",") : "";
    if (key === reviewKey) return;
    reviewKey = key;
    if (!r) { el.replaceChildren(); return; }
    const parts = [h("h2", {}, "Promotion review: rung " + r.rung + " (" + r.iterations + " iterations)"),
      h("p", { id: "review-line" }, r.line),
      h("table", { id: "plan" }, h("thead", {}, h("tr", {}, ["trial", "score", "how"].map((c) => h("th", {}, c)))),
        h("tbody", {}, r.plan.map((p) => h("tr", { "data-trial": String(p.number) }, h("td", { class: "r" }, p.number), h("td", { class: "r" }, signed(p.score)), h("td", {}, p.how))))),
      r.changes.length ? h("ul", { class: "muted" }, r.changes.map((c) => h("li", {}, c))) : null];
    if (d.may.decide) {
      const trial = h("input", { id: "review-trial", size: 4, placeholder: "N" });
      const post = (action) => async () => flash(reviewMsg, await postJSON("/api/sessions/" + enc(d.session.id) + "/review", { action: action, trial: trial.value }));
      parts.push(h("div", { class: "buttons" }, h("button", { class: "primary", id: "go", onclick: post("go") }, "Go"), " trial ", trial, " ",
        h("button", { id: "promote", onclick: post("promote") }, "promote"), " ", h("button", { id: "drop", onclick: post("drop") }, "drop")),
      h("p", { class: "muted" }, "promote N replaces the lowest planned trial; drop N lets the next in rank take its place."));
    }
    parts.push(reviewMsg);
    el.replaceChildren(h("div", { class: "card pending" }, ...parts.filter(Boolean)));
  }

  // versusText is a trial's score against the baseline at its rung, saying which baseline.
  function versusText(t) {
    const v = t.versus || (t.control_rung !== undefined ? t : null);
    if (!v) return "—";
    return signed(v.score) + " vs baseline @ rung " + v.control_rung + (v.control_rung < v.rung ? ", trained less" : "");
  }

  function renderBoard(el, d, picked) {
    const cols = [["number", "trial"], ["rung", "rung"], ["state", "state"], ["source", "source"], ["rank", "score vs baseline @ rung"], ["eligible", "eligible"], ["progress", "progress"]];
    const rows = d.trials.slice();
    // Scores of different rungs are not comparable: by score means within a rung, the highest
    // rung first, each against the baseline at its rung (versus), as the page first shows.
    const vs = (t) => (t.versus ? t.versus.score : -Infinity);
    const val = (t, k) => (k === "eligible" ? (t.eligible ? 1 : 0) : t[k]);
    rows.sort((a, b) => {
      if (sortState.key === "rank") {
        return (a.rung !== b.rung ? b.rung - a.rung : (vs(a) < vs(b) ? -1 : vs(a) > vs(b) ? 1 : a.number - b.number) * sortState.dir);
      }
      const x = val(a, sortState.key), y = val(b, sortState.key);
      return (x < y ? -1 : x > y ? 1 : a.number - b.number) * sortState.dir;
    });
    const head = cols.map(([k, label]) => h("th", { class: "sortable", "data-key": k, onclick: () => {
      sortState.dir = sortState.key === k ? -sortState.dir : -1; sortState.key = k; renderBoard(el, d, picked);
    } }, label + (sortState.key === k ? (sortState.dir > 0 ? " ▲" : " ▼") : "")));
    head.push(h("th", {}, "clip"));
    el.replaceChildren(h("h2", {}, "Leaderboard"), h("p", { class: "muted", id: "board-key" }, "★ the session's best trial · (pN) the proposal it came from"),
      h("table", { id: "leaderboard" }, h("thead", {}, h("tr", {}, head)), h("tbody", {}, rows.map((t) => h("tr", {
        class: (t.best ? "best " : "") + (picked === t.number + "@" + t.rung ? "picked" : ""), "data-trial": t.number + "@" + t.rung },
        h("td", {}, t.number + (t.best ? " ★" : "") + (t.proposal ? " (p" + t.proposal + ")" : "")), h("td", { class: "r" }, t.rung),
        h("td", {}, t.state), h("td", {}, t.source),
        h("td", { class: "r" }, versusText(t), h("div", { class: "muted" }, t.final !== undefined && t.final !== null ? signed(t.final) + " ± " + t.final_std.toFixed(3) + " vs rung 0" : t.rung > 0 && t.score !== null ? signed(t.score) + " vs rung 0" : "")),
        h("td", {}, t.score === null ? "—" : t.eligible ? "yes" : "no" + (t.why ? ": " + t.why : ""), t.score === null && t.why ? h("span", { class: "muted" }, " " + t.why) : null),
        h("td", { class: "r" }, t.state === "training" ? t.progress + " / " + t.iterations : t.iterations),
        h("td", { class: "clip-cell" }, clipCell(t)))))),
      h("p", { class: "muted" }, d.score_note + "."));
  }

  // ---- clips (issue 21) -----------------------------------------------------------------
  // A trial's clip: its poster frame, played on a click. Cells are kept across polls, so a
  // clip that plays keeps playing when the leaderboard refreshes.
  const clipCells = new Map();
  function clipCell(t) {
    if (t.clip_removed) return h("span", { class: "muted clip-removed" }, t.clip_note);
    if (!t.clip) return t.clip_note ? h("span", { class: "muted", title: t.clip_note }, "none") : "—";
    const key = t.number + "@" + t.rung + " " + t.clip.url;
    if (!clipCells.has(key)) {
      const cell = h("span", { class: "clip-thumb", "data-trial": t.number + "@" + t.rung });
      const play = () => cell.replaceChildren(clipPlayer(t.clip, { autoplay: true, width: 240 }));
      cell.append(t.clip.poster
        ? h("img", { class: "clip-poster", src: t.clip.poster, width: 120, alt: "trial " + t.number + " walking: play", title: "play the clip", onclick: play })
        : h("button", { class: "clip-play", onclick: play }, "▶ play"));
      clipCells.set(key, cell);
    }
    return clipCells.get(key);
  }

  // clipPlayer plays a clip: an MP4 in a video element, a GIF as an image (it animates).
  function clipPlayer(c, opt) {
    if (c.format === "gif") return h("img", { class: "clip-player", src: c.url + "&play=" + Date.now(), width: opt.width, alt: "clip" });
    return h("video", { class: "clip-player", src: c.url, width: opt.width, controls: true, muted: true, loop: true, playsinline: true,
      autoplay: opt.autoplay, preload: "metadata", poster: c.poster || null });
  }

  // The compare view: two trials' clips side by side, played in sync, their metrics beside
  // them; the best trial against the baseline (at its rung when carried along) by default,
  // which follows the best as trials finish until a person picks a pair.
  let clipsKey = null, clipsPick = null, clipsPicked = false;
  function renderClips(el, d) {
    const withClip = d.trials.filter((t) => t.clip);
    const removed = d.trials.some((t) => t.clip_removed);
    const key = withClip.map((t) => t.number + "@" + t.rung + t.clip.url).join(",") + (removed ? " removed" : "");
    if (key === clipsKey) return; // keep the players across polls
    clipsKey = key;
    if (withClip.length < 2) {
      el.replaceChildren(h("h2", {}, "Clips side by side"), h("p", { class: "muted" },
        removed ? "the clips were removed by prune" : withClip.length ? "one trial has a clip so far" : "no clips yet"));
      return;
    }
    const ref = (t) => t.number + "@" + t.rung;
    const best = withClip.find((t) => t.best) || withClip.slice().sort((a, b) => b.rank_score - a.rank_score)[0];
    const base = withClip.find((t) => t.number === 0 && t.rung === best.rung) || withClip.find((t) => t.number === 0 && t.rung === 0) ||
      withClip.find((t) => t !== best);
    if (!clipsPicked) clipsPick = [ref(best), ref(base === best ? withClip.find((t) => t !== best) : base)];
    const pick = (i) => h("select", { id: "clip-" + "ab"[i], onchange: (e) => { clipsPick[i] = e.target.value; clipsPicked = true; clipsKey = ""; renderClips(el, d); } },
      withClip.map((t) => h("option", { value: ref(t), selected: ref(t) === clipsPick[i] }, "trial " + t.number + " @ rung " + t.rung + " · " + versusText(t) + (t.best ? " ★" : ""))));
    const players = [];
    const side = (i) => {
      const t = withClip.find((x) => ref(x) === clipsPick[i]) || withClip[i];
      const p = clipPlayer(t.clip, { width: 360 });
      players.push(p);
      const rows = Object.entries(t.metrics || {}).map(([k, v]) => h("tr", {}, h("td", {}, metricLabel(d, k)), h("td", { class: "r" }, num(v))));
      return h("div", { class: "clip-side", "data-trial": ref(t) }, pick(i), h("div", {}, p),
        h("table", { class: "clip-metrics" }, h("caption", {}, versusText(t) + (t.eligible ? "" : " · not eligible")), h("tbody", {}, rows)));
    };
    const sides = [side(0), side(1)];
    // One plays, both play: a play, pause or seek of either is done to the other too.
    const [a, b] = players;
    if (a.tagName === "VIDEO" && b.tagName === "VIDEO") {
      for (const [x, y] of [[a, b], [b, a]]) {
        x.addEventListener("play", () => { if (y.paused) y.play().catch(() => {}); });
        x.addEventListener("pause", () => { if (!y.paused) y.pause(); });
        x.addEventListener("seeked", () => { if (Math.abs(y.currentTime - x.currentTime) > 0.05) y.currentTime = x.currentTime; });
      }
    }
    const playBoth = () => {
      for (const p of players) {
        if (p.tagName === "VIDEO") { p.currentTime = 0; p.play().catch(() => {}); } else { p.src = p.src.replace(/&play=\d+/, "") + "&play=" + Date.now(); }
      }
      el.dataset.played = String(Number(el.dataset.played || 0) + 1);
    };
    el.replaceChildren(h("h2", {}, "Clips side by side"),
      h("p", {}, h("button", { id: "play-both", class: "primary", onclick: playBoth }, "▶ play both in sync"),
        h("span", { class: "muted" }, " the same commands for every trial: standing, walking, turning")),
      h("div", { class: "clip-compare" }, sides));
  }

  function renderLadder(el, d) {
    el.replaceChildren(h("h2", {}, "Halving ladder"), h("div", { class: "ladder" }, d.ladder.map((r) => h("div", { class: "rung" },
      h("h3", {}, "rung " + r.rung + " · " + r.iterations + " iterations · " + r.filled + "/" + r.slots + (r.baseline_carried ? " + the baseline carried along" : "")),
      h("ol", {}, r.trials.map((t) => h("li", { class: t.eligible ? "eligible" : "not-eligible" },
        "trial " + t.number + ": " + (t.score === null ? t.state : versusText(t)) + (t.best ? " ★" : ""),
        t.promoted_by ? h("span", { class: "promoted-by muted" }, " · " + t.promoted_by) : null)))))));
  }

  function renderCompare(el, d) {
    el.replaceChildren(h("h2", {}, "Best vs baseline, rung by rung"), h("table", { id: "comparison" },
      h("thead", {}, h("tr", {}, ["rung", "best eligible", "score", "baseline", "baseline score", "scores", "Δ"].map((c) => h("th", {}, c)))),
      h("tbody", {}, d.comparison.map((c) => h("tr", {},
        h("td", { class: "r" }, c.rung),
        h("td", {}, c.best ? "trial " + c.best.number : "—"), h("td", { class: "r" }, c.score !== null ? signed(c.score) : "—"),
        h("td", {}, c.baseline ? "trial 0 @ rung " + c.baseline.rung + (c.matched ? "" : " (not trained to this rung)") : "—"),
        h("td", { class: "r" }, c.baseline_score !== null ? signed(c.baseline_score) : "—"),
        h("td", {}, c.reference),
        h("td", { class: "r" }, c.delta !== null ? signed(c.delta) : "—"))))),
    h("p", { class: "muted" }, "Both scores of a row are on one reference and Δ is their difference: where the baseline was trained to the same rung (control: true), both against that baseline's own metrics (it scores 0 against itself); elsewhere both against the baseline's rung-0 evaluation, with no Δ. " + d.score_note + "."));
  }

  function renderProposals(el, d) {
    el.replaceChildren(h("h2", {}, "Proposals"), ...d.proposals.map((p) => h("div", { class: "card proposal", "data-state": p.state },
      h("h3", {}, "proposal " + p.seq + " for trial " + p.number + " · " + p.source + (p.model ? " (" + p.model + ")" : "") +
        " · " + p.confidence_text + " · " + p.state),
      diffTable("patch against trial " + p.base_trial, p.diff),
      p.edited ? diffTable("edited to (this is what ran)", p.edited) : null,
      why(p),
      p.expected_impact ? h("p", { class: "muted" }, "expected impact: " + Object.entries(p.expected_impact).map(([k, v]) => k + " " + v).join(", ")) : null,
      p.decision ? h("p", { class: "decision" }, p.decision.word + " by " + p.decision.by + " (" + p.decision.platform +
        (p.decision.where ? ", " + p.decision.where : "") + ") at " + when(p.decision.at) + (p.decision.feedback ? ": “" + p.decision.feedback + "”" : "")) : null,
      p.decision && p.decision.note ? h("p", { class: "muted note" }, p.decision.note) : null)));
  }

  // why a proposal was made: a numeric proposer's sentence and its three strongest pieces
  // of evidence, the rest folded away; or the advisor's rationale.
  function why(p) {
    if (!p.summary) return p.rationale ? h("p", { class: "rationale" }, p.rationale) : null;
    const ev = p.evidence || [];
    return h("div", { class: "rationale" }, h("p", { class: "summary" }, p.summary),
      ev.length ? h("ul", { class: "evidence" }, ev.slice(0, 3).map((e) => h("li", {}, e))) : null,
      ev.length > 3 ? h("details", { class: "all-evidence" }, h("summary", {}, "all " + ev.length + " pieces of evidence"),
        h("ul", {}, ev.map((e) => h("li", {}, e)))) : null);
  }

  function auditLine(e) {
    const d = e.detail || {};
    if (e.kind === "advisor_call" || e.kind === "advisor_test") {
      const u = d.usage || {};
      return "model " + (d.model || "?") + " · tokens " + (u.prompt_tokens ?? u.prompt ?? "?") + " in / " + (u.completion_tokens ?? u.completion ?? "?") + " out" +
        (u.prompt_cache_hit_tokens !== undefined ? " (cache hit " + u.prompt_cache_hit_tokens + ")" : "") + " · " + (d.outcome || "") + (d.latency_ms !== undefined ? " · " + d.latency_ms + " ms" : "");
    }
    return e.text; // the server's line: measured numbers, times to the second
  }

  function renderAudit(el, d) {
    el.replaceChildren(h("h2", {}, "Audit timeline"), h("table", { id: "audit-table" },
      h("thead", {}, h("tr", {}, ["time", "what", "who", "detail"].map((c) => h("th", {}, c)))),
      h("tbody", {}, d.audit.map((e) => h("tr", { class: "audit-" + e.kind }, h("td", {}, when(e.time)), h("td", {}, e.kind), h("td", {}, e.actor), h("td", { class: "detail" }, auditLine(e)))))),
      d.audit_more ? h("p", { class: "note" }, d.audit_more + " older entries left out (the timeline shows the newest that fit in one read)") : null);
  }

  // ---- curves ---------------------------------------------------------------------------
  // A colour per trial that no other trial of the session shares, so none within a chart:
  // hues a golden angle apart in three lightnesses (a palette of ten repeats from the 11th).
  const colorOf = (i) => "hsl(" + ((i * 137.508) % 360).toFixed(1) + ", 70%, " + [40, 55, 30][i % 3] + "%)";

  function smooth(values, w) {
    if (w <= 0) return values;
    // TensorBoard's debiased exponential moving average.
    let last = 0, n = 0;
    return values.map((v) => { if (v === null) return null; last = last * w + (1 - w) * v; n++; return last / (1 - Math.pow(w, n)); });
  }

  async function curvesPage() {
    const meta = await getJSON("/api/sessions/" + enc(pageID) + "/tags");
    // /tags answers a page at a time (next: where the following one starts); a few pages hold any real trainer's tags.
    for (let n = 1; meta.next && n < 8; n++) { const more = await getJSON("/api/sessions/" + enc(pageID) + "/tags?after=" + enc(meta.next)); meta.tags.push(...more.tags); meta.next = more.next; }
    const chosen = new Set(meta.trials.map((t) => t.number + "@" + t.rung));
    const filter = h("input", { id: "tag-filter", placeholder: "filter tags (regular expression)", size: 30 });
    const offTags = new Set(); // tags unticked by hand; the filter narrows the rest
    const tagBoxes = meta.tags.map((tag) => h("label", { class: "tag-pick", "data-tag": tag },
      h("input", { type: "checkbox", class: "tag-box", checked: true, onchange: (ev) => { ev.target.checked ? offTags.delete(tag) : offTags.add(tag); draw(); } }), " " + tag));
    const tagList = h("div", { class: "tag-list" }, tagBoxes);
    const smoothing = h("input", { id: "smoothing", type: "range", min: 0, max: 0.99, step: 0.01, value: 0.6 });
    const smoothLabel = h("span", {}, "0.60");
    const logScale = h("input", { id: "log-scale", type: "checkbox" });
    const charts = h("div", { id: "charts", class: "charts" });
    const legend = h("div", { id: "curves-legend", class: "legend" });
    const evalPanel = h("section", { id: "eval-metrics" });
    const trialBoxes = meta.trials.map((t, i) => {
      const id = t.number + "@" + t.rung;
      const box = h("input", { type: "checkbox", class: "trial-box", "data-trial": id, checked: true, onchange: () => { box.checked ? chosen.add(id) : chosen.delete(id); draw(); } });
      return h("label", { class: "trial-pick", "data-rung": t.rung }, box, h("span", { class: "swatch" }), " trial " + t.number + " " + (t.score === null ? "" : signed(t.score)));
    });
    // Trials by rung, as scores compare within a rung: a rung's button shows it alone.
    const rungs = [...new Set(meta.trials.map((t) => t.rung))].sort((a, b) => a - b);
    const only = (keep) => {
      chosen.clear();
      meta.trials.forEach((t, i) => { const on = keep(t); trialBoxes[i].firstChild.checked = on; if (on) chosen.add(t.number + "@" + t.rung); });
      draw();
    };
    const controls = h("aside", { class: "controls" },
      h("h2", {}, "Trials"), h("div", { class: "buttons" },
        h("button", { id: "select-none", onclick: () => only(() => false) }, "none"),
        h("button", { id: "select-all", onclick: () => only(() => true) }, "all"),
        rungs.length > 1 ? rungs.map((r) => h("button", { id: "rung-" + r, class: "rung-pick", onclick: () => only((t) => t.rung === r) }, "rung " + r)) : []),
      rungs.map((r) => h("div", { class: "rung-group" }, h("h3", {}, "rung " + r), trialBoxes.filter((l) => Number(l.dataset.rung) === r))),
      h("h2", {}, "Tags"), filter, tagList,
      h("h2", {}, "Display"), h("button", { id: "reload", onclick: () => draw() }, "reload curves"), h("br"), h("label", {}, "smoothing ", smoothing, " ", smoothLabel), h("br"), h("label", {}, logScale, " log scale"),
      h("p", { class: "muted" }, "drag to zoom, double-click to reset; hover for values"));
    main.replaceChildren(h("h1", {}, h("a", { href: "/sessions/" + enc(pageID) }, "Session " + pageID.slice(0, 8)), " · curves"),
      h("div", { class: "curves-layout" }, controls, h("div", { class: "curves-main" }, evalPanel, legend, charts)));
    let data = null, plots = [], seq = 0;
    async function draw() {
      const mine = ++seq; // a slower, older answer must not overwrite a newer choice
      body.dataset.charts = 0; body.dataset.series = 0;
      const re = (() => { try { return new RegExp(filter.value, "i"); } catch (e) { return null; } })();
      tagBoxes.forEach((l) => (l.hidden = !!re && !re.test(l.dataset.tag)));
      const tags = meta.tags.filter((t) => (!re || re.test(t)) && !offTags.has(t));
      const trials = meta.trials.map((t) => t.number + "@" + t.rung).filter((id) => chosen.has(id));
      renderEval(evalPanel, meta, trials);
      plots.forEach((p) => p.destroy()); plots = [];
      if (!trials.length || !tags.length) { charts.replaceChildren(h("p", { class: "muted" }, "choose at least one trial and one tag")); return; }
      let got;
      try {
        got = await getJSON("/api/sessions/" + enc(pageID) + "/curves?trials=" + enc(trials.join(",")) + "&tags=" + enc(tags.join(",")) + "&points=" + Math.min(2000, Math.max(200, Math.round(window.innerWidth / 3))));
      } catch (err) {
        // A refused choice (too many curves at once) is said where the charts go; the trial
        // and tag lists stay, so a person can choose fewer.
        if (err instanceof NotSignedIn) throw err;
        if (mine === seq) charts.replaceChildren(h("p", { class: "error", id: "curves-error" }, "could not load the curves: " + err.message));
        return;
      }
      if (mine !== seq) return;
      data = got;
      render();
    }
    function render() {
      plots.forEach((p) => p.destroy()); plots = [];
      const w = Number(smoothing.value), log = logScale.checked;
      smoothLabel.textContent = w.toFixed(2);
      const byTag = new Map();
      for (const c of data.curves) { if (!byTag.has(c.tag)) byTag.set(c.tag, []); byTag.get(c.tag).push(c); }
      const boxes = [];
      const color = (trial) => colorOf(meta.trials.findIndex((t) => t.number + "@" + t.rung === trial));
      const name = (trial) => "trial " + trial.replace("@", " @ ");
      // One legend for every chart (TensorBoard's and W&B's way): a chart's own would list
      // every trial again, taller than its plot. Hovering an entry brings that trial forward.
      const shown = meta.trials.map((t) => t.number + "@" + t.rung).filter((id) => data.curves.some((c) => c.trial === id));
      const focus = (id) => plots.forEach((p) => { const k = id ? p.series.findIndex((s) => s.trial === id) : -1; p.setSeries(k > 0 ? k : null, { focus: true }); });
      legend.replaceChildren(...shown.map((id) => {
        const sw = h("span", { class: "swatch" }); sw.style.background = color(id);
        return h("span", { class: "legend-item", "data-trial": id, onmouseenter: () => focus(id), onmouseleave: () => focus(null) }, sw, name(id));
      }));
      for (const [tag, cs] of byTag) {
        const xs = Array.from(new Set(cs.flatMap((c) => c.steps))).sort((a, b) => a - b);
        const at = new Map(xs.map((x, i) => [x, i]));
        const series = cs.map((c) => {
          const ys = new Array(xs.length).fill(null);
          const sm = smooth(c.values, w);
          c.steps.forEach((s, i) => { const v = sm[i]; ys[at.get(s)] = log && v <= 0 ? null : v; });
          return ys;
        });
        const tip = h("div", { class: "tip", hidden: true });
        const box = h("div", { class: "chart", "data-tag": tag }, h("h3", {}, tag), tip);
        boxes.push(box);
        charts.append(box);
        const opts = {
          width: Math.max(320, Math.min(640, ((charts.clientWidth || 900) - 48) / 2)), height: 240,
          scales: { x: { time: false }, y: { distr: log ? 3 : 1 } },
          series: [{ label: "step" }, ...cs.map((c) => ({ label: name(c.trial), trial: c.trial, stroke: color(c.trial), width: 1.5, spanGaps: true }))],
          axes: [{}, { size: 60 }],
          legend: { show: false },
          focus: { alpha: 0.25 },
          cursor: { drag: { x: true, y: false }, focus: { prox: 16 } },
          hooks: { setCursor: [(u) => hover(u, tip)] },
        };
        plots.push(new uPlot(opts, [xs, ...series], box));
      }
      charts.replaceChildren(...boxes);
      body.dataset.charts = boxes.length;
      body.dataset.series = data.curves.length;
      loaded();
    }
    // hover lists the values at the cursor, highest first, in place of a legend per chart
    function hover(u, tip) {
      const i = u.cursor.idx;
      if (i == null) { tip.hidden = true; return; }
      const rows = u.series.slice(1).map((s, k) => [s, u.data[k + 1][i]]).filter(([, v]) => v !== null && v !== undefined).sort((a, b) => b[1] - a[1]);
      const more = rows.length > 8 ? [h("div", { class: "muted" }, "… " + (rows.length - 8) + " more")] : [];
      tip.replaceChildren(h("div", { class: "muted" }, "step " + u.data[0][i]), ...rows.slice(0, 8).map(([s, v]) => {
        const sw = h("span", { class: "swatch" }); sw.style.background = s.stroke();
        return h("div", {}, sw, s.label + " ", h("b", {}, num(v)));
      }), ...more);
      tip.hidden = false;
    }
    filter.addEventListener("input", () => { clearTimeout(filter._t); filter._t = setTimeout(draw, 250); });
    smoothing.addEventListener("input", () => data && render());
    logScale.addEventListener("change", () => data && render());
    await draw();
    trialBoxes.forEach((l, i) => (l.querySelector(".swatch").style.background = colorOf(i)));
  }

  function renderEval(el, meta, trials) {
    const names = meta.metric_names.filter((n) => trials.some((t) => meta.metrics[t] && meta.metrics[t][n] !== undefined));
    if (!names.length) { el.replaceChildren(); return; }
    el.replaceChildren(h("h2", {}, "Evaluation metrics (lower is better)"), h("table", { id: "eval-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "trial"), names.map((n) => h("th", { title: n }, metricLabel(meta, n))))),
      h("tbody", {}, trials.filter((t) => meta.metrics[t]).map((t) => h("tr", {}, h("td", {}, t), names.map((n) => {
        const v = meta.metrics[t][n], max = Math.max(...trials.map((x) => (meta.metrics[x] && meta.metrics[x][n]) || 0));
        const bar = h("span", { class: "bar" }); bar.style.width = (max > 0 ? (100 * v) / max : 0).toFixed(0) + "%";
        return h("td", { class: "r" }, h("div", { class: "barwrap" }, bar), num(v));
      }))))));
  }

  // ---- presets --------------------------------------------------------------------------
  async function presetsPage() {
    const d = await getJSON("/api/presets");
    main.replaceChildren(h("h1", {}, "Presets"), d.presets.length ? h("table", { id: "presets" },
      h("thead", {}, h("tr", {}, ["name", "task", "trainer", d.gain_heading, "built on", "trial", "created", ""].map((c) => h("th", {}, c)))),
      h("tbody", {}, d.presets.map((p) => h("tr", { "data-trainer": p.trainer }, h("td", {}, h("a", { href: "/presets/" + enc(p.name) }, p.name)), h("td", {}, p.task),
        h("td", { class: p.trainer === "sim" ? "trainer sim" : "trainer" }, p.trainer || "—"),
        h("td", { class: "r gain" }, p.gain), h("td", {}, p.built_on), h("td", {}, p.trial || "—"), h("td", {}, when(p.created)),
        h("td", {}, h("a", { href: "/api/presets/" + enc(p.name) + "/export", download: p.name + ".json" }, "export JSON")))))) :
      h("p", { class: "muted" }, "No presets yet: a session saves its best configuration as one when it succeeds."),
    h("p", { class: "muted" }, d.score_note + "."));
  }

  async function presetPage() {
    const d = await getJSON("/api/presets/" + enc(pageName));
    const p = d.preset;
    main.replaceChildren(h("h1", {}, "Preset " + p.name),
      ...[p.trainer_text ? h("p", { id: "trainer", class: p.trainer === "sim" ? "trainer sim" : "trainer" }, "trained on " + p.trainer_text +
        (p.trainer === "sim" ? ": apply refuses it unless told --from-sim" : "")) : null].filter(Boolean),
      h("p", {}, p.task + " · " + (p.imported ? "imported" : p.trial + " of session " + p.session_id.slice(0, 8) + " · built on " + p.built_on) + " · " + when(p.created)),
      ...(p.imported ? [] : [h("p", { id: "gain" }, d.gain_heading + ": " + p.gain_detail),
        h("p", { class: "muted" }, "score " + signed(p.score) + " ± " + p.score_std.toFixed(3) + " against its own session's baseline at rung 0 (ranks within that session only)")]),
      h("p", {}, h("a", { href: "/api/presets/" + enc(p.name) + "/export", download: p.name + ".json", id: "export" }, "export JSON"), " · ",
        h("a", { href: "/api/presets/" + enc(p.name) + "/policy", download: p.name + "-policy.onnx", id: "policy" }, "download policy.onnx")),
      d.diff.length ? diffTable("differs from the defaults", d.diff) : h("p", {}, "same as the defaults"),
      h("h2", {}, "Full configuration"), h("pre", {}, JSON.stringify(d.config, null, 2)));
  }

  const pages = { sessions: sessionsPage, session: sessionPage, curves: curvesPage, presets: presetsPage, preset: presetPage };
  if (pages[page]) {
    loadMe().then((me) => pages[page](me)).catch(fail);
  }
})();
