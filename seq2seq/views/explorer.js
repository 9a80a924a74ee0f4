// The attention explorer: draws one sentence's attention maps, as seq2seq/views/explorer.py writes
// them: {source, target, target_inputs, kinds: {kind: {title, rows, cols, weights[L][H][rows][cols]}}}.
// A page with a #maps-data element holds its sentences (a file written by `translate
// --attention-html`); without one it is the served page, which asks POST attention for each sentence.
// search.js draws what the search weighed over it (its hooks: window.seq2seqSearch).
"use strict";

(function () {
  const KINDS = ["encoder", "decoder", "cross", "attribution"];
  const TITLES = {
    encoder: "Encoder self-attention",
    decoder: "Decoder masked self-attention",
    cross: "Cross-attention",
    attribution: "Attribution",
  };
  const AXES = { // what a row (query) and a column (key) are
    encoder: "Each source piece (row) over the source (columns).",
    decoder: "Each output position (row) over the decoder's inputs so far (columns).",
    cross: "Each output piece (row) over the source (columns).",
    attribution: "Each output piece (row): what each source piece's embedding gave it, over the row's largest.",
  };
  const LIT = 0.5; // a piece lights up when it holds at least half of the strongest weight

  const state = { sentence: null, choice: {}, pinned: null };
  let ask = null; // the served page's request for a sentence (fromServer)
  const FIELDS = { text: "source-input", translation: "forced-input", prefix: "prefix-input" }; // served form

  // --- small helpers ------------------------------------------------------------------------

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const round = (w) => Math.round(w * 1e4) / 1e4;
  const percent = (w) => (100 * w).toFixed(w >= 0.1 ? 0 : 1) + "%";

  // A weight in [0, 1] as a colour: ColorBrewer's "Blues", from near-white to deep blue, linear
  // between its stops (explorer.css draws the same ramp in the legend).
  const RAMP = [[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
  function shade(w) {
    const x = Math.min(Math.max(w, 0), 1) * (RAMP.length - 1);
    const i = Math.min(Math.floor(x), RAMP.length - 2);
    const mix = RAMP[i].map((c, k) => Math.round(c + (RAMP[i + 1][k] - c) * (x - i)));
    return `rgb(${mix.join(",")})`;
  }

  // SentencePiece marks a word's start with "▁": in the sentence strips it becomes a gap.
  function readable(piece) {
    return piece.startsWith("\u2581") ? piece.slice(1) || "\u2423" : piece;
  }

  // --- the weights the panels and the strips show --------------------------------------------

  // (rows, cols) of one kind at its chosen layer and head ("mean": the mean over heads).
  function matrix(kind) {
    const { layer, head } = state.choice[kind];
    const heads = state.sentence.kinds[kind].weights[layer];
    if (head !== "mean") return heads[head];
    return heads[0].map((row, i) =>
      row.map((_, j) => round(heads.reduce((sum, h) => sum + h[i][j], 0) / heads.length)));
  }

  // --- drawing ------------------------------------------------------------------------------

  function show(sentence) {
    state.sentence = sentence;
    state.pinned = null;
    state.choice = {};
    for (const [kind, k] of Object.entries(sentence.kinds)) {
      state.choice[kind] = { layer: k.weights.length - 1, head: k.weights[0].length > 1 ? "mean" : 0 };
    }
    document.getElementById("translation").textContent = sentence.translation;
    drawStrip("source", sentence.source);
    drawStrip("target", sentence.target);
    document.getElementById("panels").replaceChildren(...KINDS.map(panel));
    if (window.seq2seqSearch) window.seq2seqSearch.show(sentence, { ask, readable, percent }); // search.js
    if (window.seq2seqTrust) window.seq2seqTrust.show(sentence); // trust.js
    document.getElementById("explorer").hidden = false;
    document.getElementById("explorer").dataset.state = "ready";
  }

  function drawStrip(side, pieces) {
    const strip = document.getElementById(side + "-strip");
    strip.replaceChildren(...pieces.map((piece, index) => {
      const chip = el("span", {
        class: "piece" + (piece.startsWith("\u2581") ? " word-start" : ""),
        "data-side": side, "data-index": index, "data-piece": piece, tabindex: 0,
      });
      chip.append(el("span", { class: "text" }, readable(piece)), el("span", { class: "value" }));
      chip.addEventListener("mouseenter", () => focus({ side, index }));
      chip.addEventListener("mouseleave", () => focus(state.pinned));
      chip.addEventListener("focus", () => focus({ side, index })); // the keyboard's hover
      chip.addEventListener("blur", () => focus(state.pinned));
      chip.addEventListener("click", () => pin({ side, index }));
      return chip;
    }));
  }

  function panel(kind) {
    const section = el("section", { class: "panel", id: "panel-" + kind, "data-kind": kind });
    section.append(el("h2", {}, TITLES[kind]));
    const k = state.sentence.kinds[kind];
    if (!k && kind === "attribution") section.hidden = true; // only `seq2seq align` pages have it
    if (!k && kind === "attribution") return section;
    if (!k) {
      section.classList.add("absent");
      section.append(el("p", { class: "note" },
        `This model has no ${TITLES[kind].toLowerCase()}: its one attention, the alignment of each ` +
        "output piece with the source, is in the cross-attention panel."));
      return section;
    }
    section.append(el("p", { class: "axes" }, AXES[kind]), controls(kind, k));
    const scroll = el("div", { class: "scroll" });
    scroll.append(table(kind));
    section.append(scroll);
    return section;
  }

  function controls(kind, k) {
    const box = el("div", { class: "controls" });
    const layer = el("select", { class: "layer-select", "data-kind": kind, "aria-label": "layer" });
    k.weights.forEach((_, l) => layer.append(el("option", { value: l }, `layer ${l + 1} of ${k.weights.length}`)));
    layer.value = state.choice[kind].layer;
    const head = el("select", { class: "head-select", "data-kind": kind, "aria-label": "head" });
    const heads = k.weights[0].length;
    if (heads > 1) head.append(el("option", { value: "mean" }, `mean of ${heads} heads`));
    for (let h = 0; h < heads; h++) head.append(el("option", { value: h }, `head ${h + 1}`));
    head.value = state.choice[kind].head;
    const redraw = () => {
      state.choice[kind] = { layer: Number(layer.value), head: head.value === "mean" ? "mean" : Number(head.value) };
      const scroll = document.querySelector(`#panel-${kind} .scroll`);
      scroll.replaceChildren(table(kind));
      focus(state.pinned);
    };
    layer.addEventListener("change", redraw);
    head.addEventListener("change", redraw);
    box.append(layer, head);
    return box;
  }

  // The map as a table: a row per query, a column per key, each cell shaded by its weight.
  function table(kind) {
    const weights = matrix(kind);
    const [rows, cols] = ["rows", "cols"].map((axis) => state.sentence[state.sentence.kinds[kind][axis]]);
    const { layer, head } = state.choice[kind];
    const t = el("table", {
      class: "map", "data-kind": kind, "data-rows": rows.length, "data-cols": cols.length,
      "data-layer": layer + 1, "data-head": head === "mean" ? "mean" : head + 1,
    });
    const header = el("tr");
    header.append(el("th", { class: "corner" }));
    cols.forEach((piece, j) => {
      const th = el("th", { class: "col-label", "data-col": j, title: piece });
      th.append(el("span", {}, piece));
      th.addEventListener("mouseenter", () => hoverLabel(kind, "col", j));
      th.addEventListener("mouseleave", () => focus(state.pinned));
      header.append(th);
    });
    t.createTHead().append(header);
    const body = t.createTBody();
    rows.forEach((piece, i) => {
      const tr = el("tr", { "data-row": i });
      const th = el("th", { class: "row-label", "data-row": i, title: piece }, piece);
      th.addEventListener("mouseenter", () => hoverLabel(kind, "row", i));
      th.addEventListener("mouseleave", () => focus(state.pinned));
      tr.append(th);
      cols.forEach((col, j) => {
        const future = kind === "decoder" && j > i; // the decoder cannot see what it has not produced
        const w = weights[i][j];
        const td = el("td", {
          class: "cell" + (future ? " future" : ""), "data-row": i, "data-col": j, "data-weight": w,
          title: future ? `${piece} cannot see ${col} (future)` : `${piece} → ${col}: ${percent(w)}`,
        });
        if (!future) td.style.background = shade(w);
        tr.append(td);
      });
      body.append(tr);
    });
    t.addEventListener("mouseover", (event) => {
      const td = event.target.closest("td.cell");
      if (td) hoverLabel(kind, "row", Number(td.dataset.row));
    });
    t.addEventListener("mouseleave", () => focus(state.pinned));
    if (window.seq2seqAlignment) window.seq2seqAlignment(t, kind, state.sentence); // alignment.js
    return t;
  }

  // A row or column label (or a cell) of a panel: the piece it stands for gets the focus.
  function hoverLabel(kind, axis, index) {
    const side = state.sentence.kinds[kind][axis === "row" ? "rows" : "cols"];
    if (side !== "target_inputs") focus({ side, index }); // decoder inputs are no output piece
  }

  function pin(selection) {
    const same = state.pinned && state.pinned.side === selection.side && state.pinned.index === selection.index;
    state.pinned = same ? null : selection;
    focus(state.pinned);
  }

  // --- the focus: one piece, its cross-attention over the other sentence -------------------

  function focus(selection) {
    document.querySelectorAll(".focus, .lit, .pinned, .dark")
      .forEach((n) => n.classList.remove("focus", "lit", "pinned", "dark"));
    for (const chip of document.querySelectorAll(".piece")) {
      chip.style.background = "";
      chip.removeAttribute("data-weight");
      chip.querySelector(".value").textContent = "";
    }
    if (window.seq2seqSearch) window.seq2seqSearch.focus(selection);
    if (!selection) return;
    const { side, index } = selection;
    const chip = document.querySelector(`#${side}-strip .piece[data-index="${index}"]`);
    chip.classList.add("focus");
    if (state.pinned && state.pinned.side === side && state.pinned.index === index) chip.classList.add("pinned");
    // the panels: the rows (and columns) that belong to this piece
    const rowKinds = side === "target" ? ["decoder", "cross"] : ["encoder"];
    for (const kind of rowKinds) {
      document.querySelectorAll(`#panel-${kind} [data-row="${index}"]`).forEach((n) => n.classList.add("focus"));
    }
    if (side === "source") {
      document.querySelectorAll(`#panel-cross [data-col="${index}"]`).forEach((n) => n.classList.add("focus"));
    }
    // the other sentence, shaded by cross-attention: a row of it for an output piece, a column for a source piece
    const cross = matrix("cross");
    const values = side === "target" ? cross[index] : cross.map((row) => row[index]);
    const top = Math.max(...values);
    const other = side === "target" ? "source" : "target";
    document.querySelectorAll(`#${other}-strip .piece`).forEach((piece, j) => {
      const w = values[j];
      piece.dataset.weight = w;
      piece.style.background = shade(w); // the panels' colour scale: one colour, one weight
      piece.classList.toggle("dark", w > 0.6);
      piece.querySelector(".value").textContent = percent(w);
      if (top > 0 && w >= LIT * top) piece.classList.add("lit");
    });
  }

  // --- where the sentences come from ------------------------------------------------------

  function fromFile(data) {
    const select = document.getElementById("sentence-select");
    data.sentences.forEach((s, n) => {
      const label = `${s.line === null ? n + 1 : s.line}: ${s.source_text}`;
      select.append(el("option", { value: n }, label.length > 90 ? label.slice(0, 89) + "…" : label));
    });
    select.addEventListener("change", () => show(data.sentences[Number(select.value)]));
    document.getElementById("about").textContent = data.about || "";
    document.getElementById("pick").hidden = false;
    if (data.sentences.length) show(data.sentences[0]);
    else document.getElementById("about").textContent += " (no sentences)";
  }

  function fromServer() {
    const form = document.getElementById("ask");
    const status = document.getElementById("status");
    form.hidden = false;
    fetch("info").then((r) => r.json()).then((info) => {
      const bleu = info.val_bleu === null ? "" : ` · validation BLEU ${info.val_bleu.toFixed(1)}`;
      document.getElementById("about").textContent =
        `${info.run}: ${info.architecture} ${info.src}→${info.tgt}${bleu}`;
    }).catch(() => {});
    const input = (id) => document.getElementById(id);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      // the sentence as typed; the optional fields only when given
      const given = Object.entries(FIELDS).filter(([key, id]) => key === "text" || input(id).value.trim());
      ask(Object.fromEntries(given.map(([key, id]) => [key, input(id).value])));
    });
    // A sentence, asked with the form's choices; the form then shows what was asked (an
    // alternative search.js sends sets the prefix).
    ask = async (body) => {
      if (input("beam-toggle").checked) body.beam_trace = true;
      for (const [key, id] of Object.entries(FIELDS)) input(id).value = body[key] || "";
      status.className = "";
      status.textContent = "translating…";
      document.getElementById("explorer").dataset.state = "busy";
      try {
        const response = await fetch("attention", {
          method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
        });
        const data = await response.json();
        if (!response.ok) throw new Error(data.error || response.statusText);
        status.textContent = "";
        show(data);
      } catch (error) {
        status.className = "error";
        status.textContent = error.message;
        document.getElementById("explorer").dataset.state = "error";
      }
    };
  }

  const embedded = document.getElementById("maps-data");
  if (embedded) fromFile(JSON.parse(embedded.textContent));
  else fromServer();
})();
