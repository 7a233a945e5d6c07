"use strict";
// The labelling page (evalyard label): one case at a time, a label per key press, each label
// POSTed to this page's own server with the session token the page carries.
(function () {
  var D = JSON.parse(document.getElementById("evalyard-data").textContent);
  var cases = D.cases, at = 0, saved = 0, pending = 0;
  var showVerdict = !!D.show_verdict;
  function $(id) { return document.getElementById(id); }
  $("label-show-verdict").checked = showVerdict;

  function verdictText(v) {
    if (!v) return "no result for this case";
    if (v.error) return "error: " + v.error;
    var parts = [];
    if (v.value !== null && v.value !== undefined) parts.push("value " + v.value);
    if (v.label !== null && v.label !== undefined) parts.push("label " + v.label);
    if (v.passed !== null && v.passed !== undefined) parts.push(v.passed ? "passed" : "failed");
    return parts.join(" · ") + (v.reasoning ? "\n\n" + v.reasoning : "");
  }

  function show() {
    var done = at >= cases.length;
    $("label-case").hidden = done;
    $("label-done").hidden = !done;
    $("label-progress").textContent = "(" + Math.min(at + 1, cases.length) + " of " + cases.length + ", " +
      saved + " labelled this session)";
    if (done) { $("label-id").textContent = ""; document.body.setAttribute("data-case", ""); return; }
    var c = cases[at];
    $("label-id").textContent = c.id + (c.why ? "  [" + c.why + "]" : "");
    $("label-input").textContent = c.input || "";
    $("label-input").hidden = !!c.input_parts;
    var parts = $("label-input-parts");  // an input with images or audio: its parts in order
    while (parts.firstChild) parts.removeChild(parts.firstChild);
    if (c.input_parts) parts.appendChild(evalyardMedia.parts(c.input_parts));
    $("label-input-box").hidden = !c.input && !c.input_parts && !!c.messages;
    $("label-candidate-box").hidden = c.candidate === null && !!c.messages;
    var turns = $("label-conversation");
    while (turns.firstChild) turns.removeChild(turns.firstChild);
    $("label-conversation-box").hidden = !c.messages;
    if (c.messages) turns.appendChild(evalyardConversation.render(c.messages, []));
    $("label-candidate").textContent = c.candidate === null ? "(no candidate)" : c.candidate;
    $("label-reference-box").hidden = c.reference === null || c.reference === undefined;
    $("label-reference").textContent = c.reference || "";
    $("label-context-box").hidden = !c.context.length;
    var list = $("label-context");
    while (list.firstChild) list.removeChild(list.firstChild);
    c.context.forEach(function (text) {
      var item = document.createElement("li");
      item.textContent = text;
      list.appendChild(item);
    });
    // the verdict stays hidden until the case is labelled, unless the person asked to see it
    $("label-verdict-box").hidden = !(showVerdict || c.label);
    $("label-verdict").textContent = verdictText(c.verdict);
    $("label-current").textContent = c.label ? "labelled " + c.label.label +
      (c.label.labeller ? " by " + c.label.labeller : "") + " (a new label replaces it)" : "not labelled yet";
    document.body.setAttribute("data-case", c.id);
  }

  function status(text) { $("label-status").textContent = text; }

  function label(value) {
    if (at >= cases.length) return;
    var c = cases[at];
    pending += 1;
    document.body.setAttribute("data-pending", pending);
    evalyardPost("/label", D.token, { case_id: c.id, label: value })
      .then(function (body) {
        c.label = { label: body.label, labeller: body.labeller };
        saved += 1;
        document.body.setAttribute("data-saved", saved);
        status("case " + c.id + " labelled " + body.label + "; the judge said: " + verdictText(c.verdict).split("\n")[0]);
        show();
      })
      .catch(function (error) {
        // back to the case, so the person sees which label was lost and can give it again
        at = cases.indexOf(c);
        show();
        status("not saved: " + error.message);
      })
      .then(function () { pending -= 1; document.body.setAttribute("data-pending", pending); });
    at += 1;
    show();
  }

  function move(step) { at = Math.max(0, Math.min(cases.length, at + step)); status(""); show(); }
  function toggle() { showVerdict = !showVerdict; $("label-show-verdict").checked = showVerdict; show(); }

  $("label-yes").addEventListener("click", function () { label("yes"); });
  $("label-no").addEventListener("click", function () { label("no"); });
  $("label-skip").addEventListener("click", function () { move(1); });
  $("label-back").addEventListener("click", function () { move(-1); });
  $("label-show-verdict").addEventListener("change", toggle);
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var key = event.key;
    if (key === "y") label("yes");
    else if (key === "n") label("no");
    else if (key === "s" || key === "ArrowRight") move(1);
    else if (key === "ArrowLeft") move(-1);
    else if (key === "v") toggle();
    else return;
    event.preventDefault();
  });
  show();
  document.body.setAttribute("data-ready", "");
})();
