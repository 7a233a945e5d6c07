"use strict";
// A write from a local page to its own server (evalyard label, evalyard review): JSON with the
// session token in its header; resolves to the answer's JSON, rejects with the server's error.
function evalyardPost(path, token, body) {
  var headers = { "Content-Type": "application/json" };
  headers["X-Evalyard-Token"] = token;
  return fetch(path, { method: "POST", headers: headers, credentials: "same-origin", body: JSON.stringify(body) })
    .then(function (response) {
      return response.json().then(function (answer) {
        if (!response.ok) throw new Error(answer.error || response.statusText);
        return answer;
      });
    });
}
