// memdir's link graph: drag a card, drag the background to pan, the wheel to zoom.
// The page draws the graph on the server (rings) with every card a link; this script
// only relaxes it with a small force layout and lets a person move it. memdir's own,
// MIT like the rest of memdir.
(function () {
  "use strict";
  var svg = document.getElementById("graph");
  if (!svg) return;
  var nodes = [], byPath = {}, lines = [];
  svg.querySelectorAll("a.node").forEach(function (a) {
    var g = a.querySelector("g");
    var m = /translate\(([-\d.]+) ([-\d.]+)\)/.exec(g.getAttribute("transform"));
    var n = { a: a, g: g, x: +m[1], y: +m[2], vx: 0, vy: 0, fixed: a.classList.contains("focus") };
    nodes.push(n); byPath[a.getAttribute("data-path")] = n;
  });
  svg.querySelectorAll("line").forEach(function (l) {
    var s = byPath[l.getAttribute("data-s")], t = byPath[l.getAttribute("data-t")];
    if (s && t) lines.push({ el: l, s: s, t: t });
  });
  function draw() {
    nodes.forEach(function (n) { n.g.setAttribute("transform", "translate(" + n.x.toFixed(1) + " " + n.y.toFixed(1) + ")"); });
    lines.forEach(function (e) {
      e.el.setAttribute("x1", e.s.x.toFixed(1)); e.el.setAttribute("y1", e.s.y.toFixed(1));
      e.el.setAttribute("x2", e.t.x.toFixed(1)); e.el.setAttribute("y2", e.t.y.toFixed(1));
    });
  }
  // A few hundred steps of repulsion between every pair, springs along links, a pull
  // to the centre; a dragged card stays where it is put.
  var heat = 1, vb0 = svg.viewBox.baseVal;
  var box = { x: vb0.x, y: vb0.y, width: vb0.width, height: vb0.height };
  function step() {
    var i, j, a, b, dx, dy, d2, f;
    for (i = 0; i < nodes.length; i++) {
      a = nodes[i];
      for (j = i + 1; j < nodes.length; j++) {
        b = nodes[j]; dx = a.x - b.x; dy = a.y - b.y; d2 = dx * dx + dy * dy + 0.01;
        f = 1800 / d2; a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
      }
    }
    lines.forEach(function (e) {
      dx = e.t.x - e.s.x; dy = e.t.y - e.s.y; f = 0.02 * (Math.sqrt(dx * dx + dy * dy) - 90);
      var d = Math.sqrt(dx * dx + dy * dy) || 1;
      e.s.vx += f * dx / d; e.s.vy += f * dy / d; e.t.vx -= f * dx / d; e.t.vy -= f * dy / d;
    });
    nodes.forEach(function (n) {
      if (n.fixed || n === dragging) { n.vx = n.vy = 0; return; }
      n.vx -= n.x * 0.004; n.vy -= n.y * 0.004;
      n.x += Math.max(-20, Math.min(20, n.vx * heat)); n.y += Math.max(-20, Math.min(20, n.vy * heat));
      // every card stays inside the picture as drawn, its label too
      n.x = Math.max(box.x + 15, Math.min(box.x + box.width - 110, n.x));
      n.y = Math.max(box.y + 15, Math.min(box.y + box.height - 15, n.y));
      n.vx *= 0.5; n.vy *= 0.5;
    });
    heat *= 0.985;
  }
  var ticks = 0;
  function run() { step(); draw(); if (++ticks < 300 && heat > 0.02) requestAnimationFrame(run); }
  if (!window.matchMedia("(prefers-reduced-motion: reduce)").matches) requestAnimationFrame(run);

  function point(ev) {
    var p = svg.createSVGPoint(); p.x = ev.clientX; p.y = ev.clientY;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }
  var dragging = null, panning = null, moved = false, start = null;
  svg.addEventListener("pointerdown", function (ev) {
    var a = ev.target.closest && ev.target.closest("a.node");
    moved = false; start = { x: ev.clientX, y: ev.clientY };
    if (a) { dragging = byPath[a.getAttribute("data-path")]; }
    else { var vb = svg.viewBox.baseVal; panning = { x: ev.clientX, y: ev.clientY, vx: vb.x, vy: vb.y }; }
  });
  svg.addEventListener("pointermove", function (ev) {
    if (!(dragging || panning)) return;
    // the pointer is captured only once it really moves: a plain click stays a click
    if (!moved && Math.abs(ev.clientX - start.x) + Math.abs(ev.clientY - start.y) < 4) return;
    if (!moved) svg.setPointerCapture(ev.pointerId);
    if (dragging) {
      var p = point(ev); moved = true; dragging.x = p.x; dragging.y = p.y; dragging.fixed = true; draw();
    } else if (panning) {
      var vb = svg.viewBox.baseVal, scale = vb.width / svg.clientWidth;
      vb.x = panning.vx - (ev.clientX - panning.x) * scale; vb.y = panning.vy - (ev.clientY - panning.y) * scale;
      moved = true;
    }
  });
  function release() { dragging = null; panning = null; }
  svg.addEventListener("pointerup", release);
  svg.addEventListener("pointercancel", release);
  // a drag is not a click: only a press without a move follows the card's link
  svg.addEventListener("click", function (ev) { if (moved) { ev.preventDefault(); moved = false; } }, true);
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var vb = svg.viewBox.baseVal, k = ev.deltaY > 0 ? 1.1 : 1 / 1.1, p = point(ev);
    vb.x = p.x - (p.x - vb.x) * k; vb.y = p.y - (p.y - vb.y) * k; vb.width *= k; vb.height *= k;
  }, { passive: false });
})();
