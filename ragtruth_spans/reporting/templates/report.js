/* The response browser of a ragtruth-spans report. Reads the embedded JSON (see reporting/html.py), filters it
   and renders one page of responses at a time. Offsets in the data are Unicode code points of the response
   (Python str indices), so the text is sliced as Array.from(response), never by UTF-16 units. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var KIND_LABEL = { correct: "correct (gold and predicted)", missed: "missed (gold only)",
                     false: "false alarm (predicted only)" };
  var state = { det: 0, task: "", model: "", show: "all", query: "", page: 0, size: 25, focus: -1 };
  var matches = [];
  var $ = function (id) { return document.getElementById(id); };

  function make(tag, attrs, text) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { el.textContent = text; }
    return el;
  }

  function typesOf(mask) {
    return data.types.filter(function (_, i) { return mask & (1 << i); });
  }

  function detectorsShown() {
    return state.det < 0 ? data.detectors.map(function (_, i) { return i; }) : [state.det];
  }

  function keep(r) {
    if (state.task && r.task !== state.task) { return false; }
    if (state.model && r.model !== state.model) { return false; }
    if (state.query) {
      var hay = (r.id + "\n" + r.response + "\n" + (r.question || "")).toLowerCase();
      if (hay.indexOf(state.query) < 0) { return false; }
    }
    if (state.show === "all") { return true; }
    if (state.show === "gold") { return r.gold.length > 0; }
    if (state.show === "clean") { return r.gold.length === 0; }
    return detectorsShown().some(function (d) {
      var det = r.det[d];
      if (state.show === "false") { return det.chars[2] > 0; }
      if (state.show === "missed") { return det.chars[1] > 0; }
      if (state.show === "wrong") { return det.chars[1] > 0 || det.chars[2] > 0; }
      if (state.show === "failed") { return det.error !== null || det.missing; }
      return true;
    });
  }

  function markTitle(run) {
    var kind = data.kinds[run[2]];
    var parts = [KIND_LABEL[kind]];
    var types = typesOf(run[3]);
    if (types.length) { parts.push("gold: " + types.join(", ")); }
    if (run[5].length) { parts.push("predicted type: " + run[5].join(", ")); }
    if (run[4] !== null) { parts.push("predicted score " + run[4].toFixed(3)); }
    return parts.join(" · ");
  }

  var VERDICT_LABEL = { contradicted: "contradicted by the context", unsupported: "not supported by the context",
                        uncertain: "uncertain (the context seems to state it)" };

  function evidenceIndex(det, run) {
    for (var i = 0; det.ev && i < det.ev.length; i++) {
      if (det.ev[i][0] < run[1] && run[0] < det.ev[i][1]) { return i; }
    }
    return -1;
  }

  function cuts(ev) {
    var points = {};
    ev[4].forEach(function (p) {
      points[p[0]] = 1; points[p[1]] = 1;
      p[3].forEach(function (c) { points[c[0]] = 1; points[c[1]] = 1; });
    });
    return Object.keys(points).map(Number).sort(function (a, b) { return a - b; });
  }

  /* The context with the passages of one span's evidence marked (code-point offsets of the context). */
  function renderContext(pre, context, ev) {
    var chars = Array.from(context);
    pre.textContent = "";
    if (!ev) { pre.textContent = context; return null; }
    var points = [0].concat(cuts(ev), [chars.length]);
    var first = null;
    for (var k = 0; k + 1 < points.length; k++) {
      var a = points[k], b = points[k + 1];
      if (b <= a) { continue; }
      var text = chars.slice(a, b).join("");
      var rank = -1, conflict = false;
      ev[4].forEach(function (p, i) {
        if (p[0] <= a && b <= p[1] && rank < 0) { rank = i; }
        p[3].forEach(function (c) { if (c[0] <= a && b <= c[1]) { conflict = true; } });
      });
      if (rank < 0 && !conflict) { pre.appendChild(document.createTextNode(text)); continue; }
      var mark = make("mark", { "class": "ev" + (rank >= 0 ? " ev-" + Math.min(rank, 2) : "") +
                                (conflict ? " ev-conflict" : ""), "data-passage": String(rank) }, text);
      if (rank >= 0) { mark.title = "passage " + (rank + 1) + " · relevance " + ev[4][rank][2].toFixed(2); }
      if (first === null) { first = mark; }
      pre.appendChild(mark);
    }
    return first;
  }

  function showEvidence(card, mark) {
    var r = data.responses[parseInt(card.getAttribute("data-index"), 10)];
    var d = mark ? parseInt(mark.getAttribute("data-det"), 10) : -1;
    var ev = mark ? r.det[d].ev[parseInt(mark.getAttribute("data-ev"), 10)] : null;
    var ctx = card.querySelector("details.context");
    var first = renderContext(ctx.querySelector("pre"), data.contexts[r.ctx], ev);
    card.querySelectorAll("p.verdict").forEach(function (el) { el.hidden = true; el.textContent = ""; });
    card.querySelectorAll("mark.ev-on").forEach(function (el) { el.classList.remove("ev-on"); });
    if (!ev) { return; }
    mark.classList.add("ev-on");
    var panel = mark.closest("div.det").querySelector("p.verdict");
    panel.hidden = false;
    panel.setAttribute("data-verdict", ev[2]);
    panel.appendChild(make("strong", { "class": "v-" + ev[2] }, VERDICT_LABEL[ev[2]] || ev[2]));
    panel.appendChild(document.createTextNode(" — " + (ev[3] || "") + " (" + ev[4].length +
                                              " passage(s) marked in the context)"));
    ctx.open = true;
    var pre = ctx.querySelector("pre");
    if (first) { pre.scrollTop = Math.max(0, first.offsetTop - pre.offsetTop - 24); }
  }

  function wireEvidence(card) {
    var pinned = null;
    var markOf = function (e) { return e.target.closest ? e.target.closest("mark[data-ev]") : null; };
    card.addEventListener("mouseover", function (e) { var m = markOf(e); if (m) { showEvidence(card, m); } });
    card.addEventListener("mouseout", function (e) {
      var m = markOf(e);
      if (m && !(e.relatedTarget && m.contains(e.relatedTarget))) { showEvidence(card, pinned); }
    });
    card.addEventListener("click", function (e) {
      var m = markOf(e);
      if (!m) { return; }
      pinned = pinned === m ? null : m;
      showEvidence(card, pinned || m);
    });
    card.addEventListener("focusin", function (e) { var m = markOf(e); if (m) { showEvidence(card, m); } });
  }

  function renderText(response, runs, det, d) {
    var chars = Array.from(response);
    var p = make("p", { "class": "response" });
    var at = 0;
    runs.forEach(function (run) {
      if (run[0] > at) { p.appendChild(document.createTextNode(chars.slice(at, run[0]).join(""))); }
      var kind = data.kinds[run[2]];
      var types = typesOf(run[3]);
      var cls = "hl k-" + kind + (types.length ? " gt-" + data.types.indexOf(types[0]) : "");
      var title = markTitle(run);
      var mark = make("mark", { "class": cls, "data-kind": kind, "data-types": types.join("|"), "title": title,
                                "aria-label": title }, chars.slice(run[0], run[1]).join(""));
      if (run[4] !== null) { mark.setAttribute("data-score", run[4]); }
      var ei = det ? evidenceIndex(det, run) : -1;
      if (ei >= 0) {
        var verdict = det.ev[ei][2];
        mark.setAttribute("data-ev", String(ei));
        mark.setAttribute("data-det", String(d));
        mark.setAttribute("data-verdict", verdict);
        mark.setAttribute("tabindex", "0");
        mark.classList.add("has-ev", "v-" + verdict);
        mark.title = title + " · evidence: " + verdict + " (hover or click to see it in the context)";
      }
      p.appendChild(mark);
      at = run[1];
    });
    if (at < chars.length) { p.appendChild(document.createTextNode(chars.slice(at).join(""))); }
    return p;
  }

  function badges(det) {
    var text = "score " + (det.score === null ? "–" : det.score.toFixed(3)) + " · correct " + det.chars[0] +
      " · missed " + det.chars[1] + " · false alarm " + det.chars[2] + " chars";
    return text;
  }

  function renderCard(r, index) {
    var card = make("article", { "class": "card", "tabindex": "-1", "data-index": index, "data-id": r.id,
                                 "data-task": r.task, "data-model": r.model });
    var head = make("header");
    head.appendChild(make("h3", {}, r.id + " · " + r.task + " · " + r.model));
    if (state.det >= 0) { head.appendChild(make("span", { "class": "badges" }, badges(r.det[state.det]))); }
    card.appendChild(head);
    if (r.question) {
      var q = make("p", { "class": "question" });
      q.appendChild(make("strong", {}, "Question: "));
      q.appendChild(document.createTextNode(r.question));
      card.appendChild(q);
    }
    var ctx = make("details", { "class": "context" });
    var context = data.contexts[r.ctx];  // each distinct context is embedded once, not once per response
    ctx.appendChild(make("summary", {}, "Context (" + Array.from(context).length + " characters)"));
    ctx.appendChild(make("pre", {}, context));
    card.appendChild(ctx);
    detectorsShown().forEach(function (d) {
      var det = r.det[d];
      var block = make("div", { "class": "det", "data-detector": data.detectors[d] });
      if (state.det < 0) { block.appendChild(make("div", { "class": "det-name" }, data.detectors[d] + " — " +
                                                  badges(det))); }
      if (det.error !== null) { block.appendChild(make("p", { "class": "failure" }, "detector failure: " + det.error)); }
      if (det.missing) { block.appendChild(make("p", { "class": "failure" }, "no prediction for this response")); }
      block.appendChild(renderText(r.response, det.runs, det, d));
      if (det.ev && det.ev.length) {
        block.appendChild(make("p", { "class": "verdict", "role": "status", "hidden": "" }));
      }
      card.appendChild(block);
    });
    wireEvidence(card);
    return card;
  }

  function applyFilters() {
    matches = [];
    data.responses.forEach(function (r, i) { if (keep(r)) { matches.push(i); } });
    state.page = 0;
    state.focus = -1;
    render();
  }

  function pages() { return Math.max(1, Math.ceil(matches.length / state.size)); }

  function render() {
    var cards = $("cards");
    cards.textContent = "";
    var first = state.page * state.size;
    var shown = matches.slice(first, first + state.size);
    var frag = document.createDocumentFragment();
    shown.forEach(function (i) { frag.appendChild(renderCard(data.responses[i], i)); });
    if (!shown.length) { frag.appendChild(make("p", { "class": "empty" }, "No response matches these filters.")); }
    cards.appendChild(frag);
    $("status").textContent = matches.length ?
      "Showing " + (first + 1) + "–" + (first + shown.length) + " of " + matches.length + " responses" +
      (matches.length < data.responses.length ? " (filtered from " + data.responses.length + ")" : "") +
      " · page " + (state.page + 1) + " of " + pages() : "0 of " + data.responses.length + " responses";
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages() - 1;
  }

  function goPage(delta) {
    var next = Math.min(pages() - 1, Math.max(0, state.page + delta));
    if (next !== state.page) { state.page = next; state.focus = -1; render(); $("cards").scrollIntoView(); }
  }

  function moveFocus(delta) {
    var cards = document.querySelectorAll("#cards article.card");
    if (!cards.length) { return; }
    var next = state.focus + delta;
    if (next >= cards.length) { goPage(1); next = 0; cards = document.querySelectorAll("#cards article.card"); }
    if (next < 0) {
      if (state.page === 0) { next = 0; } else { goPage(-1); cards = document.querySelectorAll("#cards article.card");
                                                 next = cards.length - 1; }
    }
    state.focus = next;
    cards[next].focus();
    cards[next].scrollIntoView({ block: "nearest" });
  }

  function fillSelect(select, values) {
    values.forEach(function (v) { select.appendChild(make("option", { value: v }, v)); });
  }

  function setup() {
    var tasks = [], models = [];
    data.responses.forEach(function (r) {
      if (tasks.indexOf(r.task) < 0) { tasks.push(r.task); }
      if (models.indexOf(r.model) < 0) { models.push(r.model); }
    });
    fillSelect($("f-task"), tasks.sort());
    fillSelect($("f-model"), models.sort());
    var det = $("f-det");
    data.detectors.forEach(function (name, i) { det.appendChild(make("option", { value: String(i) }, name)); });
    if (data.detectors.length > 1) { det.appendChild(make("option", { value: "-1" }, "all, side by side")); }
    det.addEventListener("change", function () { state.det = parseInt(det.value, 10); applyFilters(); });
    $("f-task").addEventListener("change", function (e) { state.task = e.target.value; applyFilters(); });
    $("f-model").addEventListener("change", function (e) { state.model = e.target.value; applyFilters(); });
    $("f-show").addEventListener("change", function (e) { state.show = e.target.value; applyFilters(); });
    $("f-size").addEventListener("change", function (e) { state.size = parseInt(e.target.value, 10); applyFilters(); });
    var timer = null;
    var onQuery = function (e) {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var query = e.target.value.trim().toLowerCase();
        if (query !== state.query) { state.query = query; applyFilters(); }
      }, 150);
    };
    ["input", "search", "change"].forEach(function (name) { $("f-query").addEventListener(name, onQuery); });
    $("prev").addEventListener("click", function () { goPage(-1); });
    $("next").addEventListener("click", function () { goPage(1); });
    $("controls").addEventListener("submit", function (e) { e.preventDefault(); });
    document.addEventListener("keydown", function (e) {
      var tag = (e.target.tagName || "").toLowerCase();
      if (e.ctrlKey || e.metaKey || e.altKey) { return; }
      if (tag === "input" || tag === "select" || tag === "textarea") {
        if (e.key === "Escape") { e.target.blur(); }
        return;
      }
      var actions = {
        j: function () { moveFocus(1); }, k: function () { moveFocus(-1); },
        n: function () { goPage(1); }, p: function () { goPage(-1); },
        "/": function () { $("f-query").focus(); },
        c: function () {
          var card = document.activeElement;
          var ctx = card && card.classList && card.classList.contains("card") ? card.querySelector("details") : null;
          if (ctx) { ctx.open = !ctx.open; }
        }
      };
      if (actions[e.key]) { e.preventDefault(); actions[e.key](); }
    });
    $("controls").hidden = false;
    $("keys").hidden = false;
    applyFilters();
    document.body.setAttribute("data-ready", "true");
  }

  setup();
})();
