// What the search weighed, over the explorer's strips (the fields POST attention adds, and offline
// pages keep; a sentence without them gets nothing drawn):
// - alternatives[i] = {piece, p, entropy, top: [{piece, p, prefix}]}, one per output piece: each
//   output chip gets a bar as wide as its probability, and the #alternatives panel lists the k
//   pieces most likely at the position last hovered (or pinned); on the served page each one with
//   a prefix is a button that translates the sentence again starting with that prefix;
// - forced: how many leading output pieces a prefix forced (their chips are marked);
// - beam = {beam, nodes: [{id, parent, step, piece (the root: pieces), score, state, final}], nbest}:
//   the beam search as an SVG tree, a column per output position, in #beam-panel.
// explorer.js calls show(sentence, page) once it has drawn a sentence (page: {ask, readable,
// percent}, ask null offline) and focus(selection) with each piece it focuses.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  // the tree's grid, in px: a node is a box HEIGHT high on a row ROW high, as wide as its column's
  // longest label (CHAR a character, PAD each side), columns GAP apart
  const ROW = 24, HEIGHT = 18, CHAR = 7.2, PAD = 6, GAP = 28, LABEL = 16;
  const current = { sentence: null, page: null, shown: null };

  window.seq2seqSearch = { show, focus };

  function show(sentence, page) {
    Object.assign(current, { sentence, page, shown: null });
    const alternatives = document.getElementById("alternatives");
    alternatives.hidden = !sentence.alternatives;
    alternatives.replaceChildren(el("p", { class: "note" },
      "Hover an output piece to see the pieces the model found most likely there."));
    if (sentence.alternatives) shadeChips(sentence);
    drawBeam(sentence.beam);
  }

  // The alternatives panel follows the output piece focused, and stays on it when the focus
  // leaves (so that the pointer can travel to an alternative and click it).
  function focus(selection) {
    const alternatives = current.sentence && current.sentence.alternatives;
    if (!alternatives || !selection || selection.side !== "target") return;
    if (current.shown === selection.index || !alternatives[selection.index]) return;
    current.shown = selection.index;
    drawAlternatives(selection.index);
  }

  // --- small helpers ------------------------------------------------------------------------

  function el(tag, attrs, text, namespace) {
    const node = namespace ? document.createElementNS(namespace, tag) : document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const svg = (tag, attrs, text) => el(tag, attrs, text, SVG);
  const short = (text) => (text.length > LABEL ? text.slice(0, LABEL - 1) + "…" : text);
  const fixed = (x) => (x === undefined ? "" : x.toFixed(3));

  // Pieces as the text they spell: SentencePiece's "▁" is a space, EOS spells nothing.
  function spell(pieces) {
    return pieces.filter((p) => p !== "</s>").join("").replaceAll("\u2581", " ").trim();
  }

  // --- the alternatives ---------------------------------------------------------------------

  function shadeChips(sentence) {
    document.querySelectorAll("#target-strip .piece").forEach((chip, i) => {
      const position = sentence.alternatives[i];
      if (!position) return;
      const bar = el("span", { class: "prob" });
      bar.style.width = `${100 * position.p}%`; // CSSOM, which the served page's CSP allows
      chip.append(bar);
      chip.dataset.prob = position.p;
      chip.title = `the model gave it ${current.page.percent(position.p)}`;
      if (i < (sentence.forced || 0)) {
        chip.classList.add("forced");
        chip.title += " (forced by the prefix)";
      }
    });
  }

  function drawAlternatives(index) {
    const { sentence, page } = current;
    const position = sentence.alternatives[index];
    const forced = index < (sentence.forced || 0) ? ", forced by the prefix" : "";
    const head = el("p", { class: "alternatives-head" }, `output piece ${index + 1}: `);
    head.append(
      el("span", { class: "chosen-piece" }, page.readable(position.piece)),
      ` at ${page.percent(position.p)}${forced} · entropy ${position.entropy.toFixed(2)} nats, as ` +
        `unsure as a choice among ${Math.exp(position.entropy).toFixed(1)} equally likely pieces`,
    );
    const list = el("div", { class: "alternative-list", "data-index": index });
    list.append(...position.top.map((choice) => alternative(choice, position.piece)));
    const note = page.ask
      ? "Click a piece: the sentence is translated again, the output before this position and that piece forced."
      : "Translating again from an alternative needs the served page: seq2seq serve --run RUN.";
    document.getElementById("alternatives").replaceChildren(head, list, el("p", { class: "note" }, note));
  }

  function alternative(choice, chosen) {
    const { sentence, page } = current;
    const clickable = page.ask !== null && typeof choice.prefix === "string";
    const row = el(clickable ? "button" : "div", {
      class: "alternative" + (choice.piece === chosen ? " chosen" : ""),
      "data-piece": choice.piece, "data-p": choice.p,
    });
    const bar = el("span", { class: "bar" });
    const fill = el("span", { class: "fill" });
    fill.style.width = `${100 * choice.p}%`;
    bar.append(fill);
    row.append(el("span", { class: "alt-piece" }, page.readable(choice.piece)), bar,
      el("span", { class: "alt-p" }, page.percent(choice.p)));
    if (!clickable) return row;
    row.type = "button";
    row.dataset.prefix = choice.prefix;
    row.title = `translate again, starting with: ${choice.prefix}`;
    row.addEventListener("click", () => page.ask({ text: sentence.source_text, prefix: choice.prefix }));
    return row;
  }

  // --- the beam as a tree -------------------------------------------------------------------

  function drawBeam(beam) {
    const scroll = document.getElementById("beam-scroll");
    document.getElementById("beam-panel").hidden = !beam;
    if (!beam) return scroll.replaceChildren();
    const byId = new Map(beam.nodes.map((n) => [n.id, n]));
    const ancestry = (n) => { // n, its parent, ..., the root
      const line = [];
      for (let m = n; m; m = byId.get(m.parent)) line.push(m);
      return line;
    };
    const own = (n) => (n.parent === null ? n.pieces || [] : [n.piece]); // the root's: the forced pieces
    const spelled = (n) => spell(ancestry(n).reverse().flatMap(own));
    const met = (n) => (n.met ? ` \u2713${n.met}` : ""); // constraints met (a constrained beam's bank)
    const label = (n) => short(n.parent === null ? spell(own(n)) || "start" : current.page.readable(n.piece)) + met(n);
    const rank = new Map(beam.nbest.map((id, r) => [id, r + 1]));
    const path = new Set(beam.nbest.flatMap((id) => ancestry(byId.get(id)).map((m) => m.id)));
    const grid = layout(beam.nodes, label);
    const tree = svg("svg", { id: "beam-tree", width: grid.width, height: grid.height, role: "img" });
    const edges = svg("g", { class: "edges" });
    const drawn = new Map(); // id -> [its node, the edge to its parent]
    for (const n of beam.nodes) {
      const box = node(n, grid, label(n), title(n, spelled(n), rank.get(n.id)));
      box.classList.toggle("nbest", rank.has(n.id));
      box.classList.toggle("best", rank.get(n.id) === 1);
      box.classList.toggle("path", path.has(n.id) && !rank.has(n.id));
      const parent = byId.get(n.parent);
      const edge = parent ? link(parent, n, grid, path.has(n.id)) : null;
      if (edge) edges.append(edge);
      drawn.set(n.id, [box, edge]);
      const light = (on) => { // its path back to the root
        for (const m of ancestry(n)) drawn.get(m.id).forEach((part) => part && part.classList.toggle("trace", on));
      };
      box.addEventListener("mouseenter", () => light(true));
      box.addEventListener("mouseleave", () => light(false));
    }
    tree.append(edges, ...[...drawn.values()].map(([box]) => box)); // the nodes over the edges
    scroll.replaceChildren(tree);
    summary(beam, byId, spelled);
  }

  function node(n, grid, label, title) {
    const box = svg("g", {
      class: "node", "data-id": n.id, "data-state": n.state, ...(n.met === undefined ? {} : { "data-met": n.met }),
      transform: `translate(${grid.x.get(n.id)},${grid.y.get(n.id)})`,
    });
    box.append(svg("title", {}, title), svg("rect", { width: grid.widths.get(n.step), height: HEIGHT, rx: 4 }),
      svg("text", { x: PAD, y: HEIGHT - 5 }, label));
    return box;
  }

  // An edge from the parent's right side to the child's left side.
  function link(parent, n, grid, nbest) {
    const x1 = grid.x.get(parent.id) + grid.widths.get(parent.step), y1 = grid.y.get(parent.id) + HEIGHT / 2;
    const x2 = grid.x.get(n.id), y2 = grid.y.get(n.id) + HEIGHT / 2, mid = (x1 + x2) / 2;
    return svg("path", {
      class: nbest ? "edge nbest" : "edge", "data-id": n.id,
      d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
    });
  }

  // Columns by step (the root's, the pieces forced before the search, first); in a column the
  // nodes in their parents' order, then best score first, so that edges seldom cross.
  function layout(nodes, label) {
    const steps = [...new Set(nodes.map((n) => n.step))].sort((a, b) => a - b);
    const row = new Map(), x = new Map(), y = new Map(), widths = new Map();
    let left = 0, rows = 0;
    for (const step of steps) {
      const column = nodes.filter((n) => n.step === step)
        .sort((a, b) => (row.get(a.parent) || 0) - (row.get(b.parent) || 0) || b.score - a.score);
      widths.set(step, Math.max(...column.map((n) => label(n).length * CHAR + 2 * PAD), 30));
      column.forEach((n, i) => {
        row.set(n.id, i);
        x.set(n.id, left);
        y.set(n.id, i * ROW + (ROW - HEIGHT) / 2);
      });
      left += widths.get(step) + GAP;
      rows = Math.max(rows, column.length);
    }
    return { x, y, widths, width: Math.max(left - GAP, 1), height: rows * ROW };
  }

  function title(n, text, rank) {
    const what = n.parent === null ? `start: ${text || "nothing forced"}` : `${n.piece} → "${text}"`;
    const final = n.final === undefined ? "" : `, final ${fixed(n.final)} (score / length penalty)`;
    const best = rank ? `, n-best #${rank}` : "";
    const met = n.met === undefined ? "" : `\nconstraints met: ${n.met}${n.unmet ? `, ${n.unmet} unmet` : ""}`;
    return `${what}\nstep ${n.step}, ${n.state}, score ${fixed(n.score)}${final}${best}${met}`;
  }

  function summary(beam, byId, spelled) {
    const count = (state) => beam.nodes.filter((n) => n.state === state).length;
    const steps = new Set(beam.nodes.map((n) => n.step)).size - 1;
    document.getElementById("beam-summary").textContent =
      `Beam ${beam.beam}: ${beam.nodes.length - 1} hypotheses over ${steps} steps, ${count("kept")} kept, ` +
      `${count("finished")} finished, ${count("pruned")} pruned. Hover a node for its score.`;
    const list = document.getElementById("beam-nbest");
    list.replaceChildren(...beam.nbest.map((id) => {
      const n = byId.get(id);
      return el("li", { "data-id": id }, `${spelled(n)} (final ${fixed(n.final)})`);
    }));
  }
})();
