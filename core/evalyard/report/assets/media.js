"use strict";
// A case's images and audio on every page (report, experiment, labelling, review): content parts
// drawn in their order (text as text, an image as a thumbnail that opens full size, audio as a
// player), each medium's source read from the page's evalyard-media element (see
// evalyard/report/media_view.py: a data URI, a file beside a static page, or the server's route).
var evalyardMedia = (function () {
  var holder = document.getElementById("evalyard-media");
  var sources = holder ? JSON.parse(holder.textContent) : {};
  var KINDS = { image_url: "image", input_audio: "audio" };
  var viewer = null, opener = null;

  function node(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function mib(bytes) { return (bytes / 1048576).toFixed(bytes < 1048576 ? 2 : 0) + " MiB"; }
  function label(kind, info) {
    return kind + " " + (info.path || info.sha256.slice(0, 12)) + " (" + (info.type || "") +
      (info.width ? ", " + info.width + "\u00d7" + info.height : "") + ")";
  }

  // full size: one dialog for the page, opened from a thumbnail, closed by Escape, a click or its button
  function open(src, alt, from) {
    if (!viewer) {
      viewer = node("div", "media-viewer");
      viewer.setAttribute("role", "dialog");
      viewer.setAttribute("aria-modal", "true");
      viewer.setAttribute("aria-label", "image, full size");
      viewer.hidden = true;
      var close = node("button", "media-close", "close (Esc)");
      close.type = "button";
      viewer.appendChild(close);
      viewer.appendChild(node("img", "media-full"));
      viewer.addEventListener("click", hide);
      document.body.appendChild(viewer);
      // capture, before the page's own keys (Escape would close the case view under the image)
      window.addEventListener("keydown", function (e) {
        if (viewer.hidden) return;
        if (e.key === "Escape") hide();
        if (e.key !== "Tab") { e.stopPropagation(); e.preventDefault(); }
      }, true);
    }
    var img = viewer.querySelector("img");
    img.src = src;
    img.alt = alt;
    opener = from;
    viewer.hidden = false;
    viewer.querySelector("button").focus();
  }
  function hide() {
    viewer.hidden = true;
    if (opener) opener.focus();
    opener = null;
  }

  function medium(part) {
    var kind = KINDS[part.type], info = part.media || {};
    var box = node("figure", "media media-" + kind);
    if (info.remote) {  // never fetched by a page: the URL, as text
      box.appendChild(node("figcaption", "muted", "remote " + kind + ", not loaded by this page: " + info.url));
      return box;
    }
    box.setAttribute("data-sha256", info.sha256);
    var source = sources[info.sha256];
    if (!source || !source.src) {
      box.appendChild(node("figcaption", "muted media-missing", label(kind, info) + ": not in this page" + (source ?
        " (past its " + mib(source.budget) + " of embedded media, and written where no file can sit beside it)" : "")));
      return box;
    }
    if (kind === "image") {
      var thumb = node("button", "media-thumb");
      thumb.type = "button";
      thumb.title = "show full size";
      thumb.setAttribute("aria-label", label(kind, info) + ": show full size");
      var img = node("img");
      img.src = source.src;
      img.alt = label(kind, info);
      thumb.appendChild(img);
      thumb.addEventListener("click", function () { open(source.src, img.alt, thumb); });
      box.appendChild(thumb);
    } else {
      var player = node("audio");
      player.controls = true;
      player.preload = "metadata";
      player.src = source.src;
      player.setAttribute("aria-label", label(kind, info));
      box.appendChild(player);
    }
    var caption = node("figcaption", "muted", label(kind, info));
    if (source.linked) caption.appendChild(node("span", "media-linked",
      " \u00b7 linked, not embedded: a file beside this page (past its " + mib(source.budget) + " of embedded media)"));
    box.appendChild(caption);
    return box;
  }

  // content parts in their order: text parts as text blocks, media as above
  function parts(list) {
    var box = node("div", "parts");
    list.forEach(function (part) {
      if (part && KINDS[part.type]) box.appendChild(medium(part));
      else if (part && part.text != null) box.appendChild(node("pre", "text", part.text));
    });
    return box;
  }
  // the parts kept in elements the server drew (the experiment page): data-media-parts holds them as JSON
  function fill() {
    var slots = document.querySelectorAll("[data-media-parts]");
    for (var i = 0; i < slots.length; i++) {
      slots[i].appendChild(parts(JSON.parse(slots[i].getAttribute("data-media-parts"))));
    }
  }
  fill();
  return { parts: parts, hasMedia: function (list) {
    return Array.isArray(list) && list.some(function (part) { return part && KINDS[part.type]; });
  } };
})();
