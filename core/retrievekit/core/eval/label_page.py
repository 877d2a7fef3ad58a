"""The one HTML page of ``retrievekit label`` (its style and script inline; no build step, nothing fetched).

Texts from the corpus and the questions are set with ``textContent``, never as HTML.

Examples:
    >>> PAGE.startswith("<!doctype html>") and "textContent" in PAGE and "innerHTML" not in PAGE
    True
"""

from __future__ import annotations

__all__ = ["PAGE"]

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>retrievekit label</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 1rem auto; padding: 0 1rem; color: #222; }
#bar { height: .5rem; background: #eee; border-radius: .25rem; }
#bar > div { height: 100%; background: #3a7; border-radius: .25rem; width: 0; }
#question { font-size: 1.3rem; margin: 1rem 0; }
.passage { border: 2px solid #ddd; border-radius: .4rem; padding: .6rem; margin: .5rem 0; white-space: pre-wrap; }
.passage.selected { border-color: #36c; }
.passage[data-label="relevant"] { background: #e6f6ea; }
.passage[data-label="not"] { background: #f8e8e8; }
.passage[data-label="skip"] { background: #f2f2f2; color: #777; }
.tag { float: right; font-size: .8rem; color: #555; }
#enough { padding: .5rem; background: #e6f6ea; border-radius: .3rem; display: none; }
#status { color: #a33; }
kbd { border: 1px solid #aaa; border-radius: .2rem; padding: 0 .3rem; }
</style>
</head>
<body>
<div id="progress"></div>
<div id="bar"><div></div></div>
<p id="enough"></p>
<p id="help"><kbd>y</kbd> relevant &middot; <kbd>n</kbd> not relevant &middot; <kbd>s</kbd> skip &middot;
<kbd>j</kbd>/<kbd>k</kbd> next/previous passage &middot; <kbd>]</kbd>/<kbd>[</kbd> next/previous question</p>
<div id="question"></div>
<div id="passages"></div>
<p id="status"></p>
<script>
"use strict";
const state = { index: null, question: null, selected: 0, progress: null };
const KEYS = { y: "relevant", "1": "relevant", n: "not", "2": "not", s: "skip", "3": "skip" };
const NAMES = { relevant: "relevant", not: "not relevant", skip: "skipped" };

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(path, init);
  const data = await r.json();
  if (!r.ok) { throw new Error(data.error || r.statusText); }
  return data;
}

function showProgress(p) {
  state.progress = p;
  document.getElementById("progress").textContent =
    `question ${state.index === null ? "-" : state.index + 1} of ${p.questions}; ${p.done} done; ` +
    `${p.labelled} with a relevant passage (${p.needed} needed for +-${p.half_width} on the AUC)`;
  document.querySelector("#bar > div").style.width = `${Math.min(100, 100 * p.labelled / p.needed)}%`;
  const enough = document.getElementById("enough");
  enough.style.display = p.enough ? "block" : "none";
  enough.textContent = p.enough ? `Enough labelled for an interval of about +-${p.half_width}: ` +
    `${p.labelled} questions with a relevant passage. Run retrievekit advise with --qrels on the labels file ` +
    `(and --questions on your questions file); label more for a narrower interval.` : "";
}

function render() {
  const q = state.question;
  document.getElementById("question").textContent = q.text;
  const box = document.getElementById("passages");
  box.replaceChildren();
  q.candidates.forEach((c, i) => {
    const div = document.createElement("div");
    div.className = "passage" + (i === state.selected ? " selected" : "");
    div.dataset.id = c.id;
    div.dataset.label = c.label || "";
    const tag = document.createElement("span");
    tag.className = "tag";
    tag.textContent = `${c.id}${c.label ? " - " + NAMES[c.label] : ""}`;
    div.append(tag, document.createTextNode(c.text));
    div.addEventListener("click", () => { state.selected = i; render(); });
    box.append(div);
  });
  document.body.dataset.question = q.id;
  document.body.dataset.index = String(state.index);
}

async function load(index) {
  if (index === null || index === undefined) {
    document.getElementById("question").textContent = "Every question is done. Thank you.";
    document.getElementById("passages").replaceChildren();
    document.body.dataset.question = "";
    document.body.dataset.index = "done";
    state.index = null;
    return;
  }
  state.question = await api(`/api/question/${index}`);
  state.index = index;
  const first = state.question.candidates.findIndex(c => !c.label);
  state.selected = first < 0 ? 0 : first;
  render();
  showProgress(state.progress);
}

async function give(choice) {
  const q = state.question;
  if (!q || !q.candidates.length) { return; }
  const c = q.candidates[state.selected];
  const p = await api("/api/label", { question: q.id, doc: c.id, label: choice });
  c.label = choice;
  const next = q.candidates.findIndex((d, i) => i > state.selected && !d.label);
  const any = q.candidates.findIndex(d => !d.label);
  showProgress(p);
  if (any < 0) { await load(p.next); return; }
  state.selected = next >= 0 ? next : any;
  render();
}

function move(step) {
  const n = state.question ? state.question.candidates.length : 0;
  if (n) { state.selected = (state.selected + step + n) % n; render(); }
}

async function handle(key) {
  const status = document.getElementById("status");
  try {
    if (KEYS[key]) { await give(KEYS[key]); }
    else if (key === "j" || key === "ArrowDown") { move(1); }
    else if (key === "k" || key === "ArrowUp") { move(-1); }
    else if (key === "]" && state.index !== null && state.index + 1 < state.progress.questions) {
      await load(state.index + 1); }
    else if (key === "[" && state.index) { await load(state.index - 1); }
    status.textContent = "";
  } catch (err) { status.textContent = `not saved: ${err.message}`; }
}

let queue = Promise.resolve();  // keys are handled one after another, in the order they were pressed
const HANDLED = new Set([...Object.keys(KEYS), "j", "k", "ArrowDown", "ArrowUp", "[", "]"]);
document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || !HANDLED.has(e.key)) { return; }
  e.preventDefault();
  document.body.dataset.busy = "1";
  queue = queue.then(() => handle(e.key)).then(() => { document.body.dataset.busy = ""; });
});

(async () => {
  try {
    const p = await api("/api/progress");
    state.progress = p;
    await load(p.next);
    showProgress(p);
    document.body.dataset.ready = "1";
  } catch (err) { document.getElementById("status").textContent = `cannot load: ${err.message}`; }
})();
</script>
</body>
</html>
"""
"""The page: progress, the question, its passages with their labels, the keyboard help."""
