"use strict";
// A conversation case drawn as its turns: each message's role and text, an assistant's tool calls
// (name and JSON arguments) and the tool results answering them, and beside each message the
// per-turn verdicts judges gave it (details.turns: {message, verdict, value, reason, error}), a
// message's images and audio drawn by media.js. Shared by the report, the dashboard, the labelling
// and review pages; text only, never HTML.
var evalyardConversation = (function () {
  function node(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function textOf(content) {
    if (Array.isArray(content)) {
      return content.map(function (p) { return (p && p.text) || ""; }).join("\n");
    }
    return content == null ? "" : String(content);
  }
  function prettyArguments(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return String(text); }
  }
  // verdicts by message index, from every scorer's details.turns: [{scorer, verdict, value, reason, error}]
  function verdictsByMessage(scorers) {
    var out = {};
    scorers.forEach(function (s) {
      var turns = s.details && s.details.turns;
      if (!Array.isArray(turns)) return;
      turns.forEach(function (t) {
        if (!t || typeof t.message !== "number") return;
        (out[t.message] = out[t.message] || []).push({ scorer: s.name, verdict: t.verdict, value: t.value,
                                                       reason: t.reason, error: t.error });
      });
    });
    return out;
  }
  function verdictNode(v) {
    var good = v.verdict === "yes" || v.value === 1, bad = v.verdict === "no" || v.value === 0;
    var box = node("div", "turn-verdict" + (v.error ? " error" : good ? " good" : bad ? " bad" : ""));
    box.setAttribute("data-scorer", v.scorer);
    box.appendChild(node("span", "turn-verdict-scorer", v.scorer));
    var said = v.error ? "error" : (v.verdict != null ? v.verdict : "") +
      (typeof v.value === "number" && v.verdict == null ? String(Math.round(v.value * 1000) / 1000) : "");
    box.appendChild(node("b", "turn-verdict-value", said));
    if (v.reason || v.error) box.appendChild(node("div", "turn-verdict-reason", v.error || v.reason));
    return box;
  }
  function render(messages, scorers) {
    var verdicts = verdictsByMessage(scorers || []);
    var names = {};
    messages.forEach(function (m) {
      (m.tool_calls || []).forEach(function (c) { if (c && c.function) names[c.id] = c.function.name; });
    });
    var list = node("ol", "conversation");
    messages.forEach(function (m, i) {
      var role = m.role || "?";
      var item = node("li", "turn role-" + role);
      item.setAttribute("data-message", String(i));
      item.setAttribute("data-role", role);
      var body = node("div", "turn-body");
      var head = node("div", "turn-role", role === "tool" ? "tool result" : role);
      if (role === "tool") head.appendChild(node("span", "tool-result-name mono", " " + (names[m.tool_call_id] || m.tool_call_id || "")));
      head.appendChild(node("span", "turn-index muted", " #" + i));
      body.appendChild(head);
      if (evalyardMedia.hasMedia(m.content)) {  // images and audio among the text, in their order
        var parts = evalyardMedia.parts(m.content);
        parts.className += " turn-content";
        body.appendChild(parts);
      } else {
        var text = textOf(m.content);
        if (text) body.appendChild(node("pre", "text turn-content", text));
      }
      (m.tool_calls || []).forEach(function (c) {
        var call = node("div", "tool-call");
        call.setAttribute("data-tool", c.function.name);
        call.appendChild(node("span", "tool-call-name mono", "calls " + c.function.name));
        call.appendChild(node("pre", "text code tool-call-arguments", prettyArguments(c.function.arguments)));
        body.appendChild(call);
      });
      item.appendChild(body);
      var side = node("div", "turn-verdicts");
      (verdicts[i] || []).forEach(function (v) { side.appendChild(verdictNode(v)); });
      item.appendChild(side);
      list.appendChild(item);
    });
    return list;
  }
  return { render: render };
})();
