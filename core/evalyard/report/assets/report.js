"use strict";
// The report's case table and case view. The data is embedded as column arrays (see
// evalyard/report/data.py); only the visible page of rows is ever put in the DOM, so tens of
// thousands of cases filter and sort without freezing the page.
(function () {
  var holder = document.getElementById("evalyard-data");
  if (!holder) return;
  // Large runs embed their data gzipped and base64-encoded (see render.py): the browser's own
  // DecompressionStream unpacks it, no library and no request involved.
  if (holder.getAttribute("data-encoding") === "gzip-base64") {
    var raw = atob(holder.textContent.trim()), bytes = new Uint8Array(raw.length);
    for (var b = 0; b < raw.length; b++) bytes[b] = raw.charCodeAt(b);
    new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text()
      .then(function (text) { start(JSON.parse(text)); });
  } else {
    start(JSON.parse(holder.textContent));
  }

  function start(D) {
    var S = D.scorers, C = D.cases, R = D.results, B = D.base || null;
    var N = C.id.length;
    var TEXT_KEYS = ["reasoning", "explanation", "rationale", "reason", "message", "output", "traceback", "stderr"];
    var CODE_KEYS = { output: 1, traceback: 1, stderr: 1 };
    // Verdict words get a colour; booleans do not (output_truncated: false is no bad news).
    var GOOD = /^(yes|pass|passed|supported|correct|entailment|entailed|match|faithful|relevant|ok)$/i;
    var BAD = /^(no|fail|failed|unsupported|incorrect|contradiction|contradicted|non match|unfaithful|irrelevant|error|timeout)$/i;

    function el(tag, attrs, children) {
      var node = document.createElement(tag);
      if (attrs) for (var k in attrs) {
        if (k === "text") node.textContent = attrs[k];
        else if (k === "cls") node.className = attrs[k];
        else node.setAttribute(k, attrs[k]);
      }
      (children || []).forEach(function (c) { if (c != null) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
      return node;
    }
    function fmt(v) {
      if (v === null || v === undefined) return "–";
      if (typeof v !== "number") return String(v);
      if (Number.isInteger(v)) return String(v);
      if (Math.abs(v) < 0.001) return v.toPrecision(3);  // small weights and p-values stay readable
      return Math.abs(v) >= 1000 ? v.toFixed(1) : v.toFixed(3);
    }
    function fmtValue(v) { return v === null || v === undefined ? "–" : v.toFixed(3); }

    // -- per-case status: 2 = a scorer errored, 1 = a threshold was missed, 0 = neither ------------
    var status = new Int8Array(N), regressed = new Uint8Array(N);
    S.forEach(function (s) {
      var r = R[s.name];
      for (var i = 0; i < N; i++) {
        if (r.p[i] === 0 && status[i] < 1) status[i] = 1;
      }
      Object.keys(r.e).forEach(function (i) { status[+i] = 2; });
      if (B && B.v[s.name]) {
        var bv = B.v[s.name], sign = s.higher_is_better === false ? -1 : 1;
        for (var j = 0; j < N; j++) {
          if (bv[j] != null && r.v[j] != null && sign * (r.v[j] - bv[j]) < -1e-9) regressed[j] = 1;
        }
      }
    });
    function isError(i, name) { return Object.prototype.hasOwnProperty.call(R[name].e, i); }

    // -- state, filter, sort ---------------------------------------------------------------------------
    var state = { status: "all", label: "", q: "", sortKey: null, sortDir: 1, page: 0, size: 50 };
    var haystack = null;
    var view = [];

    function searchText(i) {
      return [C.id[i], C.input[i], C.candidate[i], C.reference[i]].join("\u0001").toLowerCase();
    }
    function apply() {
      var q = state.q.trim().toLowerCase();
      if (q && !haystack) { haystack = new Array(N); for (var h = 0; h < N; h++) haystack[h] = searchText(h); }
      var label = null;
      if (state.label) { var cut = state.label.indexOf("="); label = [state.label.slice(0, cut), state.label.slice(cut + 1)]; }
      var out = [];
      for (var i = 0; i < N; i++) {
        if (state.status === "failed" && status[i] < 1) continue;
        if (state.status === "errors" && status[i] !== 2) continue;
        if (state.status === "regressed" && !regressed[i]) continue;
        if (label) {
          var col = R[label[0]], k = col.l ? col.l[i] : null;
          if (k === null || col.labels[k] !== label[1]) continue;
        }
        if (q && haystack[i].indexOf(q) < 0) continue;
        out.push(i);
      }
      if (state.sortKey === null) {
        out.sort(function (a, b) { return (status[b] - status[a]) || (a - b); });  // failing cases first
      } else if (state.sortKey === "id") {
        out.sort(function (a, b) { return state.sortDir * String(C.id[a]).localeCompare(String(C.id[b])); });
      } else {
        var v = R[state.sortKey].v, dir = state.sortDir;
        out.sort(function (a, b) {
          var x = v[a], y = v[b];
          if (x === null && y === null) return a - b;
          if (x === null) return 1;
          if (y === null) return -1;  // unscored cases last in either direction
          return dir * (x - y) || (a - b);
        });
      }
      view = out;
      state.page = Math.min(state.page, Math.max(0, Math.ceil(view.length / state.size) - 1));
      render();
    }

    // -- table -----------------------------------------------------------------------------------------
    var head = document.getElementById("case-head"), body = document.getElementById("case-body");
    function headers() {
      var cols = [{ key: "id", text: "case" }].concat(S.map(function (s) { return { key: s.name, text: s.name + (s.higher_is_better === false ? " ↓" : "") }; }));
      head.textContent = "";
      cols.forEach(function (c) {
        var th = el("th", { cls: "sortable", "data-key": c.key, title: "sort by " + c.key, text: c.text });
        if (state.sortKey === c.key) th.className += state.sortDir > 0 ? " sorted-asc" : " sorted-desc";
        th.addEventListener("click", function () {
          if (state.sortKey === c.key) { if (state.sortDir < 0) { state.sortKey = null; state.sortDir = 1; } else state.sortDir = -1; }
          else { state.sortKey = c.key; state.sortDir = 1; }
          headers(); apply();
        });
        head.appendChild(th);
      });
      head.appendChild(el("th", { text: "candidate" }));
    }
    function cell(i, s) {
      var r = R[s.name];
      if (isError(i, s.name)) return el("td", { cls: "num error", title: r.e[i], text: "error" });
      var text = fmtValue(r.v[i]), k = r.l ? r.l[i] : null;
      if (k !== null && k !== undefined) text = (r.v[i] === null ? "" : text + " ") + r.labels[k];
      var cls = "num" + (r.p[i] === 0 ? " fail" : r.p[i] === 1 ? " pass" : "");
      var td = el("td", { cls: cls, text: text });
      if (B && B.v[s.name] && B.v[s.name][i] != null) td.title = "base " + fmtValue(B.v[s.name][i]);
      return td;
    }
    function render() {
      var start = state.page * state.size, stop = Math.min(view.length, start + state.size);
      var frag = document.createDocumentFragment();
      for (var n = start; n < stop; n++) {
        var i = view[n];
        var tr = el("tr", { "data-case": C.id[i], "data-index": String(i) });
        tr.appendChild(el("td", { cls: "mono case-id", text: C.id[i] }));
        S.forEach(function (s) { tr.appendChild(cell(i, s)); });
        tr.appendChild(el("td", { cls: "text", text: C.candidate[i] == null ? "" : String(C.candidate[i]).slice(0, 200) }));
        frag.appendChild(tr);
      }
      body.textContent = "";
      body.appendChild(frag);
      var pages = Math.max(1, Math.ceil(view.length / state.size));
      document.getElementById("p-info").textContent = view.length
        ? "cases " + (start + 1) + "–" + stop + " of " + view.length + (view.length < N ? " (filtered from " + N + ")" : "") + " · page " + (state.page + 1) + " of " + pages
        : "no case matches (of " + N + ")";
      document.getElementById("p-prev").disabled = state.page === 0;
      document.getElementById("p-next").disabled = state.page >= pages - 1;
    }
    body.addEventListener("click", function (ev) {
      var tr = ev.target.closest("tr[data-index]");
      if (tr) openCase(+tr.getAttribute("data-index"));
    });

    // -- controls --------------------------------------------------------------------------------------
    // Option values are SCORER=LABEL: scorer names never hold "=", labels may.
    var labelSelect = document.getElementById("f-label");
    S.forEach(function (s) {
      R[s.name].labels.forEach(function (label) {
        labelSelect.appendChild(el("option", { value: s.name + "=" + label, text: s.name + ": " + label }));
      });
    });
    if (labelSelect.options.length === 1) labelSelect.disabled = true;
    document.getElementById("f-status").addEventListener("change", function (e) { state.status = e.target.value; state.page = 0; apply(); });
    labelSelect.addEventListener("change", function (e) { state.label = e.target.value; state.page = 0; apply(); });
    document.getElementById("f-size").addEventListener("change", function (e) { state.size = +e.target.value; state.page = 0; render(); });
    var timer = null;
    document.getElementById("f-search").addEventListener("input", function (e) {
      clearTimeout(timer);
      timer = setTimeout(function () { state.q = e.target.value; state.page = 0; apply(); }, 120);
    });
    document.getElementById("p-prev").addEventListener("click", function () { state.page--; render(); });
    document.getElementById("p-next").addEventListener("click", function () { state.page++; render(); });

    // -- case view -------------------------------------------------------------------------------------
    var overlay = document.getElementById("case-view"), cvBody = document.getElementById("cv-body");
    var current = -1;
    function field(name, node) { return el("div", { cls: "field" }, [el("div", { cls: "field-name", text: name }), node]); }
    function textBlock(text, code) { return el("pre", { cls: "text" + (code ? " code" : ""), text: text == null ? "" : String(text) }); }
    function verdictClass(v) {
      var t = String(v);
      return GOOD.test(t) ? "verdict-good" : BAD.test(t) ? "verdict-bad" : "";
    }
    function scalarNode(v) {
      if (v === null || v === undefined) return el("span", { cls: "muted", text: "null" });
      if (typeof v === "number") return el("span", { text: fmt(v) });
      if (typeof v === "object") return textBlock(JSON.stringify(v, null, 2));
      if (typeof v === "boolean") return el("span", { text: String(v) });
      if (typeof v === "string" && (v.indexOf("\n") >= 0 || v.length > 160)) return textBlock(v);
      var s = el("span", { text: String(v) });
      var c = verdictClass(v); if (c) s.className = c;
      return s;
    }
    function isRecordList(v) {
      return Array.isArray(v) && v.length > 0 && v.every(function (x) { return x && typeof x === "object" && !Array.isArray(x); });
    }
    // A list of records (claims with verdicts, checklist items with answers and confidences,
    // per-sample results) reads best as a table; everything else as key/value rows.
    function recordTable(list) {
      var cols = [];
      list.forEach(function (r) { Object.keys(r).forEach(function (k) { if (cols.indexOf(k) < 0) cols.push(k); }); });
      var table = el("table", { cls: "items" });
      table.appendChild(el("tr", null, [el("th", { text: "#" })].concat(cols.map(function (c) { return el("th", { text: c }); }))));
      list.forEach(function (r, n) {
        table.appendChild(el("tr", null, [el("td", { cls: "muted", text: String(n + 1) })].concat(cols.map(function (c) {
          var v = r[c];
          if (isRecordList(v) || (v && typeof v === "object")) return el("td", null, [textBlock(JSON.stringify(v, null, 2))]);
          return el("td", null, [scalarNode(v)]);
        }))));
      });
      return table;
    }
    function renderDetails(details, depth) {
      depth = depth || 0;
      var box = el("div", { cls: "details" });
      var keys = Object.keys(details || {});
      if (!keys.length) return box;
      TEXT_KEYS.forEach(function (k) {
        if (!(k in details)) return;
        var v = details[k];
        if (Array.isArray(v) && v.every(function (x) { return typeof x !== "object"; })) v = v.join("\n");
        if (typeof v === "string" && v !== "") box.appendChild(field(k, textBlock(v, CODE_KEYS[k])));
      });
      var kv = el("table", { cls: "kv" }), rows = 0;
      keys.forEach(function (k) {
        var v = details[k];
        var shown = TEXT_KEYS.indexOf(k) >= 0 && (typeof v === "string" || (Array.isArray(v) && v.every(function (x) { return typeof x !== "object"; })));
        if (shown) return;
        if (isRecordList(v)) { box.appendChild(field(k, recordTable(v))); return; }
        if (v && typeof v === "object" && !Array.isArray(v)) {
          // nested objects read as nested key/value tables, down to a depth where JSON is clearer
          if (depth < 2) { kv.appendChild(el("tr", null, [el("th", { text: k }), el("td", null, [renderDetails(v, depth + 1)])])); rows++; return; }
        }
        var value;
        if (Array.isArray(v) && v.every(function (x) { return x === null || typeof x !== "object"; })) value = el("span", { text: v.join(", ") });
        else value = scalarNode(v);
        kv.appendChild(el("tr", null, [el("th", { text: k }), el("td", null, [value])]));
        rows++;
      });
      if (rows) box.appendChild(kv);
      return box;
    }
    function scoreBlock(i, s) {
      var r = R[s.name], err = isError(i, s.name);
      var badge = err ? el("span", { cls: "badge error", text: "error" })
        : r.p[i] === 0 ? el("span", { cls: "badge fail", text: "failed" })
        : r.p[i] === 1 ? el("span", { cls: "badge pass", text: "passed" }) : null;
      var title = el("h3", null, [el("span", { text: s.name }), el("span", { cls: "mono", text: fmtValue(r.v[i]) }),
        r.l && r.l[i] != null ? el("span", { cls: "muted", text: r.labels[r.l[i]] }) : null, badge,
        s.threshold != null ? el("span", { cls: "muted", text: "threshold " + fmt(s.threshold) }) : null,
        B && B.v[s.name] ? el("span", { cls: "muted", text: "base " + fmtValue(B.v[s.name][i]) }) : null]);
      var block = el("div", { cls: "score-block", "data-scorer": s.name }, [title]);
      if (err) block.appendChild(field("error", textBlock(r.e[i], true)));
      var d = r.d[i];
      if (d && Object.keys(d).length) block.appendChild(renderDetails(d));
      else if (!err) block.appendChild(el("div", { cls: "muted", text: "no details" }));
      return block;
    }
    // --epochs: every epoch's output and each scorer's verdict on it, for the cases whose epochs
    // the page holds (a bounded number: those whose verdict changed first)
    function verdictNode(v) {
      if (!v) return el("span", { cls: "muted", text: "–" });
      if (v.error) return el("span", { cls: "badge error", title: v.error, text: "error" });
      return el("span", null, [el("span", { cls: "mono", text: fmtValue(v.value) }),
        v.label != null ? el("span", { cls: "muted", text: " " + v.label }) : null,
        v.passed == null ? null : " ", v.passed === true ? el("span", { cls: "badge pass", text: "passed" }) : v.passed === false ? el("span", { cls: "badge fail", text: "failed" }) : null]);
    }
    function epochsBlock(caseId) {
      var E = D.epochs, rows = E.cases[caseId];
      var block = el("div", { cls: "score-block", id: "cv-epochs" }, [el("h3", null, [el("span", { text: E.n + " epochs" })])]);
      if (!rows) {
        block.appendChild(el("div", { cls: "muted", text: "This page holds the epochs of " + Object.keys(E.cases).length +
          " cases (at most " + E.limit + ", those whose verdict changed across epochs first); this case is not among them." }));
        return block;
      }
      var table = el("table", { cls: "grid epochs" });
      table.appendChild(el("tr", null, [el("th", { text: "epoch" }), el("th", { text: "output" })].concat(S.map(function (s) { return el("th", { text: s.name }); }))));
      rows.forEach(function (r) {
        var out = r.error ? el("span", { cls: "badge error", title: r.error, text: "error" }) : textBlock(r.output);
        table.appendChild(el("tr", { "data-epoch": String(r.epoch) }, [el("td", { cls: "mono", text: String(r.epoch) }), el("td", null, [out])]
          .concat(S.map(function (s) { return el("td", null, [verdictNode(r.verdicts[s.name])]); }))));
      });
      block.appendChild(table);
      return block;
    }
    // A retrieval: the passages in their ranking's order (ordered by the server as trec_eval ranks
    // them: this script never reorders), the relevant ones marked with their grade, and the
    // per-passage verdicts of any scorer whose details say they are of the retrieved passages
    // (details.verdicts in rank order with details.verdicts_of "retrieved": many judges keep
    // verdicts of other things, statements or orders, that must not land beside a passage).
    var LONG_PASSAGE = 320;
    function passageVerdict(v) {
      var good = v === 1 || v === true || GOOD.test(String(v)), bad = v === 0 || v === false || BAD.test(String(v));
      return el("span", { cls: good ? "verdict-good" : bad ? "verdict-bad" : "", text: good ? "\u2713 " + fmt(v) : bad ? "\u2717 " + fmt(v) : fmt(v) });
    }
    function passageText(text) {
      if (text == null) return el("div", { cls: "muted", text: "(no text)" });
      if (text.length <= LONG_PASSAGE) return textBlock(text);
      return el("details", { cls: "passage-text" }, [el("summary", { text: text.slice(0, 200) + "\u2026 (" + text.length + " characters)" }), textBlock(text)]);
    }
    function passagesField(i, ranking) {
      var judged = S.filter(function (s) {
        var d = R[s.name].d[i];
        return d && Array.isArray(d.verdicts) && d.verdicts.length === ranking.length && ranking.length > 0 &&
          d.verdicts_of === "retrieved";
      });
      var relevant = (C.relevant && C.relevant[i]) || {}, shown = {};
      var list = el("ol", { cls: "passages", id: "cv-passages" }, ranking.map(function (p, n) {
        shown[p.id] = 1;
        var isRelevant = p.grade != null && p.grade >= 1;
        var head = el("div", { cls: "passage-head" }, [el("span", { cls: "rank", text: "#" + p.rank }), el("span", { cls: "mono passage-id", text: p.id }),
          p.score != null ? el("span", { cls: "muted passage-score", text: "score " + fmt(p.score) }) : null,
          isRelevant ? el("span", { cls: "grade", text: "relevant, grade " + p.grade })
            : p.grade != null ? el("span", { cls: "muted", text: "judged not relevant, grade " + p.grade }) : null]
          .concat(judged.map(function (s) {
            return el("span", { cls: "passage-verdict", "data-scorer": s.name }, [el("span", { cls: "muted", text: s.name + " " }), passageVerdict(R[s.name].d[i].verdicts[n])]);
          })));
        var attrs = { cls: isRelevant ? "passage relevant" : "passage", "data-id": p.id, "data-rank": String(p.rank) };
        if (p.grade != null) attrs["data-grade"] = String(p.grade);
        return el("li", attrs, [head, passageText(p.text)]);
      }));
      var missed = Object.keys(relevant).filter(function (id) { return relevant[id] >= 1 && !shown[id]; });
      var count = Object.keys(relevant).filter(function (id) { return relevant[id] >= 1; }).length;
      var title = "retrieved (" + ranking.length + " passages" + (ranking.length && ranking[0].score != null ? ", by score" : "") +
        (count ? "; " + (count - missed.length) + " of " + count + " relevant" : "") + ")";
      var box = el("div", null, [list, missed.length ? el("div", { cls: "muted", id: "cv-missed", text: "relevant, not retrieved: " + missed.join(", ") }) : null]);
      return field(title, box);
    }
    function openCase(i) {
      current = i;
      document.getElementById("cv-title").textContent = "Case " + C.id[i];
      cvBody.textContent = "";
      var parts = C.input_parts && C.input_parts[i];
      if (parts) cvBody.appendChild(field("input", evalyardMedia.parts(parts)));  // its text, images and audio in order
      else if (C.input[i] != null) cvBody.appendChild(field("input", textBlock(C.input[i])));
      var messages = C.messages && C.messages[i];
      if (messages) {
        // the turns, with each judge's per-turn verdicts (details.turns) beside the message it judged
        var judged = S.map(function (s) { return { name: s.name, details: R[s.name].d[i] }; });
        var turns = field("conversation", evalyardConversation.render(messages, judged));
        turns.id = "cv-conversation";
        cvBody.appendChild(turns);
      }
      // an extraction (--extract) read the answer before a scorer did: the raw answer beside what each read
      var read = S.filter(function (s) { var d = R[s.name].d[i]; return d && d.extracted != null; });
      if (B) {
        cvBody.appendChild(el("div", { cls: "two-col" }, [field("candidate (base)", textBlock(B.candidate[i])), field("candidate", textBlock(C.candidate[i]))]));
      } else if (read.length) {
        cvBody.appendChild(el("div", { cls: "two-col extracted" }, [field("candidate as written", textBlock(C.candidate[i]))]
          .concat(read.map(function (s) { return field("as " + s.name + " read it", textBlock(R[s.name].d[i].extracted)); }))));
      } else if (!messages || C.candidate[i] != null) cvBody.appendChild(field("candidate", textBlock(C.candidate[i])));
      if (C.reference[i] != null) cvBody.appendChild(field("reference", textBlock(C.reference[i])));
      var ranking = C.retrieved && C.retrieved[i];
      if (ranking) cvBody.appendChild(passagesField(i, ranking));
      else if (C.context[i] && C.context[i].length) {
        cvBody.appendChild(field("context", el("ol", { cls: "context" }, C.context[i].map(function (p) { return el("li", null, [textBlock(p)]); }))));
      }
      var refs = C.reference_contexts && C.reference_contexts[i];
      if (refs) cvBody.appendChild(field("reference contexts", el("ol", { cls: "context" }, refs.map(function (p) { return el("li", null, [textBlock(p)]); }))));
      if (C.metadata[i]) cvBody.appendChild(field("metadata", renderDetails(C.metadata[i])));
      S.forEach(function (s) { cvBody.appendChild(scoreBlock(i, s)); });
      if (D.epochs) cvBody.appendChild(epochsBlock(C.id[i]));
      overlay.hidden = false;
      var hash = "#case=" + encodeURIComponent(C.id[i]);
      if (location.hash !== hash) history.replaceState(null, "", hash);
    }
    function closeCase() {
      overlay.hidden = true; current = -1;
      if (location.hash) history.replaceState(null, "", location.pathname + location.search);
    }
    function step(delta) {
      if (current < 0 || !view.length) return;
      var at = view.indexOf(current);
      var next = at < 0 ? 0 : Math.min(view.length - 1, Math.max(0, at + delta));
      openCase(view[next]);
    }
    document.getElementById("cv-close").addEventListener("click", closeCase);
    document.getElementById("cv-prev").addEventListener("click", function () { step(-1); });
    document.getElementById("cv-next").addEventListener("click", function () { step(1); });
    overlay.addEventListener("click", function (e) { if (e.target === overlay) closeCase(); });
    document.addEventListener("keydown", function (e) {
      if (overlay.hidden) return;
      if (e.key === "Escape") closeCase();
      else if (e.key === "j") step(1);
      else if (e.key === "k") step(-1);
    });
    var byId = null;
    function fromHash() {
      var m = /^#case=(.*)$/.exec(location.hash);
      if (!m) return;
      if (!byId) { byId = {}; for (var i = 0; i < N; i++) byId[C.id[i]] = i; }
      var i2 = byId[decodeURIComponent(m[1])];
      if (i2 !== undefined) openCase(i2);
    }
    window.addEventListener("hashchange", fromHash);

    headers();
    apply();
    fromHash();
    document.body.setAttribute("data-ready", "1");  // tests and scripts wait for this
  }
})();
