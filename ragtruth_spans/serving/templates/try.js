"use strict";
(function () {
  const config = JSON.parse(document.getElementById("config").textContent);
  const $ = (id) => document.getElementById(id);
  const form = $("form"), button = $("submit"), errorBox = $("error"), result = $("result");
  let threshold = null;  // {value, name} from GET /v1/model, fetched once

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value; else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child);
    return node;
  }
  // Offsets in the answers are code points (Python str indices), never UTF-16 units.
  const slice = (points, start, end) => points.slice(start, end).join("");
  const fmt = (x) => (typeof x === "number" ? x.toFixed(3) : "–");

  function headers() {
    const h = {"Content-Type": "application/json"};
    const key = config.auth ? $("api-key").value.trim() : "";
    if (key) h.Authorization = "Bearer " + key;
    return h;
  }

  function showError(status, message) {
    errorBox.textContent = (status ? "Error " + status + ": " : "Error: ") + message;
    errorBox.hidden = false;
  }

  function pickExample() {
    const i = $("example").value;
    if (i === "") return;
    const ex = config.examples[Number(i)];
    $("task").value = ex.task; $("context").value = ex.context; $("question").value = ex.question || "";
    $("response").value = ex.response;
  }

  function decisionThreshold(point, task) {
    const src = point || {};
    if (typeof src.response_threshold === "number") return {value: src.response_threshold, name: "response threshold"};
    if (typeof src.threshold === "number") return {value: src.threshold, name: "threshold"};
    const many = src.thresholds || {};
    for (const key of [task, "*"]) if (typeof many[key] === "number") return {value: many[key], name: "threshold (" + key + ")"};
    return null;
  }

  async function fetchThreshold() {
    if (threshold !== null) return threshold;
    try {
      const answer = await fetch("/v1/model", {headers: headers()});
      if (answer.ok) threshold = {point: (await answer.json()).operating_point};
    } catch (e) { /* the verdict says the threshold is unknown */ }
    return threshold;
  }

  function renderAnswer(response, spans) {
    const points = Array.from(response), out = $("answer");
    out.replaceChildren();
    const order = spans.map((s, i) => [s, i]).sort((a, b) => a[0].start - b[0].start);
    let at = 0;
    for (const [span, i] of order) {
      const start = Math.max(span.start, at);
      if (span.end <= start) continue;
      out.append(slice(points, at, start));
      const label = (span.type || "span") + (typeof span.score === "number" ? ", score " + fmt(span.score) : "");
      out.append(el("mark", {"class": "span", "data-index": String(i), tabindex: "0", title: label,
                             "aria-label": slice(points, start, span.end) + " (" + label + ")"},
                    slice(points, start, span.end)));
      at = span.end;
    }
    out.append(slice(points, at, points.length));
  }

  function passageNode(context, passage) {
    const points = Array.from(context), node = el("li", {});
    const conflicts = (passage.conflicts || []).filter((c) => c[0] >= passage.start && c[1] <= passage.end)
      .sort((a, b) => a[0] - b[0]);
    let at = passage.start;
    for (const [start, end] of conflicts) {
      if (start < at) continue;
      node.append(slice(points, at, start), el("mark", {"class": "conflict", title: "states something else"}, slice(points, start, end)));
      at = end;
    }
    node.append(slice(points, at, passage.end), el("span", {"class": "hint"}, " (context " + passage.start + "–" + passage.end + ", relevance " + fmt(passage.score) + ")"));
    return node;
  }

  function renderSpans(spans, context) {
    const box = $("spans");
    box.replaceChildren();
    if (!spans.length) { box.append(el("p", {"class": "meta"}, "No span flagged.")); return; }
    const body = el("tbody", {});
    spans.forEach((span, i) => {
      const why = el("td", {"class": "why"});
      if (span.verdict) why.append(el("span", {"class": "verdict-" + span.verdict}, span.verdict), span.reason ? " — " + span.reason : "");
      if (span.evidence && span.evidence.length) why.append(el("ul", {"class": "passages"}, ...span.evidence.map((p) => passageNode(context, p))));
      if (!why.childNodes.length) why.append(el("span", {"class": "hint"}, "no evidence asked for"));
      body.append(el("tr", {"data-index": String(i)}, el("td", {}, span.text), el("td", {}, span.type || "–"),
                     el("td", {"class": "num"}, fmt(span.score)), el("td", {"class": "num"}, span.start + "–" + span.end), why));
    });
    box.append(el("div", {"class": "scroll"}, el("table", {}, el("caption", {}, spans.length + " span" + (spans.length > 1 ? "s" : "") + " (offsets: characters of the answer, half-open)"),
                  el("thead", {}, el("tr", {}, ...["text", "type", "score", "characters", "evidence"].map((h) => el("th", {scope: "col"}, h)))), body)));
  }

  function renderVerdict(answer, task) {
    const chosen = decisionThreshold(threshold && threshold.point, task), score = answer.score;
    const verdict = $("verdict");
    verdict.replaceChildren();
    if (answer.error) {
      verdict.append(el("strong", {"class": "flagged"}, "Could not judge: "), answer.error);
    } else {
      const flagged = answer.spans.length > 0 || (chosen && typeof score === "number" && score >= chosen.value);
      verdict.append(el("strong", {"class": flagged ? "flagged" : "clean"}, flagged ? "Likely hallucinated" : "No hallucination found"),
                     " · response score " + fmt(score));
      if (chosen) verdict.append(" against the decision " + chosen.name + " " + fmt(chosen.value) + (typeof score === "number" ? (score >= chosen.value ? " (at or above)" : " (below)") : ""));
      else verdict.append(threshold ? " · this detector has no response threshold: its spans are its decision" : " · decision threshold unknown (GET /v1/model failed)");
    }
    $("meter-fill").style.width = (typeof score === "number" ? Math.round(score * 100) : 0) + "%";
    const tick = $("meter-threshold");
    tick.hidden = !chosen;
    if (chosen) tick.style.left = "calc(" + (chosen.value * 100) + "% - 1px)";
  }

  async function submit() {
    if (button.disabled) return;
    const body = {context: $("context").value, response: $("response").value, task: $("task").value};
    if ($("question").value.trim()) body.question = $("question").value;
    if (config.evidence && $("evidence").checked) body.evidence = true;
    errorBox.hidden = true;
    if (!body.context.trim() || !body.response.trim()) { showError(0, "give a context and an answer"); return; }
    button.disabled = true;
    try {
      const reply = await fetch("/v1/detect", {method: "POST", headers: headers(), body: JSON.stringify(body)});
      const answer = await reply.json().catch(() => ({error: reply.statusText || "the server's answer is not JSON"}));
      if (!reply.ok) {
        const retry = reply.headers.get("Retry-After");
        showError(reply.status, (answer.error || "request failed") + (retry ? " (retry in " + retry + " s)" : ""));
        return;
      }
      await fetchThreshold();
      renderVerdict(answer, body.task);
      renderAnswer(body.response, answer.spans);
      renderSpans(answer.spans, body.context);
      result.hidden = false;
      document.body.dataset.answered = "true";
    } catch (e) {
      showError(0, "the service could not be reached (" + e.message + ")");
    } finally {
      button.disabled = false;
    }
  }

  function activate(index) {
    document.querySelectorAll("mark.span.active, tr.active").forEach((n) => n.classList.remove("active"));
    if (index === null) return;
    document.querySelectorAll('mark.span[data-index="' + index + '"], tr[data-index="' + index + '"]')
      .forEach((n) => n.classList.add("active"));
  }

  $("example").addEventListener("change", pickExample);
  form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); submit(); }
  });
  for (const type of ["focusin", "mouseover"]) {
    $("result").addEventListener(type, (event) => {
      const target = event.target.closest("[data-index]");
      activate(target ? target.dataset.index : null);
    });
  }
  document.body.dataset.ready = "true";
})();
