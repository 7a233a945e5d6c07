"use strict";
// The blind review page (evalyard review): one case at a time, two answers named A and B, a
// verdict per key press, each verdict POSTed to this page's own server with the session token.
(function () {
  var D = JSON.parse(document.getElementById("evalyard-data").textContent);
  var cases = D.cases, given = D.given || {}, at = 0, saved = 0, pending = 0;
  var NAMES = { A: "A is better", B: "B is better", tie: "tie", both_bad: "both bad" };
  function $(id) { return document.getElementById(id); }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function firstOpen() {  // a resumed session starts at the first case this reviewer has not judged
    for (var i = 0; i < cases.length; i++) if (!given[cases[i].id]) return i;
    return cases.length;
  }

  function side(name, answer) {
    var turns = $("review-" + name + "-conversation");
    clear(turns);
    if (answer.messages) turns.appendChild(evalyardConversation.render(answer.messages, []));
    $("review-" + name).textContent = answer.text === null ? "(no answer)" : answer.text;
  }

  function show() {
    var done = at >= cases.length;
    var reviewed = cases.filter(function (c) { return given[c.id]; }).length;
    $("review-case").hidden = done;
    $("review-done").hidden = !done;
    $("review-progress").textContent = "(" + Math.min(at + 1, cases.length) + " of " + cases.length + ", " +
      reviewed + " reviewed)";
    if (done) { $("review-id").textContent = ""; document.body.setAttribute("data-case", ""); return; }
    var c = cases[at], mine = given[c.id];
    $("review-id").textContent = c.id;
    $("review-input").textContent = c.input || "";
    $("review-input").hidden = !!c.input_parts;
    var parts = $("review-input-parts");  // an input with images or audio: its parts in order
    clear(parts);
    if (c.input_parts) parts.appendChild(evalyardMedia.parts(c.input_parts));
    $("review-input-box").hidden = !c.input && !c.input_parts && !!c.messages;
    var turns = $("review-conversation");
    clear(turns);
    $("review-conversation-box").hidden = !c.messages;
    if (c.messages) turns.appendChild(evalyardConversation.render(c.messages, []));
    $("review-context-box").hidden = !c.context.length;
    var list = $("review-context");
    clear(list);
    c.context.forEach(function (text) {
      var item = document.createElement("li");
      item.textContent = text;
      list.appendChild(item);
    });
    side("a", c.a);
    side("b", c.b);
    $("review-side-a").classList.toggle("chosen", !!mine && mine.verdict === "A");
    $("review-side-b").classList.toggle("chosen", !!mine && mine.verdict === "B");
    $("review-note").value = mine ? mine.note : "";
    $("review-current").textContent = mine ? "your verdict: " + NAMES[mine.verdict] + " (a new one replaces it)"
                                           : "not reviewed yet";
    document.body.setAttribute("data-case", c.id);
  }

  function status(text) { $("review-status").textContent = text; }

  function judge(verdict) {
    if (at >= cases.length) return;
    var c = cases[at], note = $("review-note").value;
    pending += 1;
    document.body.setAttribute("data-pending", pending);
    evalyardPost("/review", D.token, { case_id: c.id, verdict: verdict, note: note })
      .then(function (body) {
        given[c.id] = { verdict: body.verdict, note: note };
        saved += 1;
        document.body.setAttribute("data-saved", saved);
        status("case " + c.id + ": " + NAMES[body.verdict] + " saved");
        show();
      })
      .catch(function (error) {
        // back to the case, so the reviewer sees which verdict was lost and can give it again
        at = cases.indexOf(c);
        show();
        status("not saved: " + error.message);
      })
      .then(function () { pending -= 1; document.body.setAttribute("data-pending", pending); });
    at += 1;
    show();
  }

  function move(step) { at = Math.max(0, Math.min(cases.length, at + step)); status(""); show(); }

  Object.keys(NAMES).forEach(function (verdict) {
    $("review-" + verdict).addEventListener("click", function () { judge(verdict); });
  });
  $("review-skip").addEventListener("click", function () { move(1); });
  $("review-back").addEventListener("click", function () { move(-1); });
  var byKey = {};
  Object.keys(D.keys).forEach(function (verdict) { byKey[D.keys[verdict]] = verdict; });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var key = event.key;
    if (event.target === $("review-note")) {  // typing a note: only Esc leaves it
      if (key === "Escape") { $("review-note").blur(); event.preventDefault(); }
      return;
    }
    if (byKey[key]) judge(byKey[key]);
    else if (key === "n") $("review-note").focus();
    else if (key === "s" || key === "ArrowRight") move(1);
    else if (key === "ArrowLeft") move(-1);
    else return;
    event.preventDefault();
  });
  at = firstOpen();
  show();
  document.body.setAttribute("data-ready", "");
})();
