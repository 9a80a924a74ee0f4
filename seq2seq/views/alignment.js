// Word links over the explorer's maps, for the pages `seq2seq align` writes: a sentence with
// {alignment: {source_words, target_words, links, sure, possible}} (each piece's word, -1 for EOS;
// links as [source word, target word]) gets the links found framed in red on the cross-attention
// and attribution maps, and the gold links marked (a dot: Sure; a ring: Possible). A sentence with
// an attribution map gets a checkbox that shows it beside the attention.
"use strict";

window.seq2seqAlignment = function (table, kind, sentence) {
  const a = sentence.alignment;
  if (!a || (kind !== "cross" && kind !== "attribution")) return;
  const key = (i, j) => `${i}-${j}`;
  const sets = ["links", "sure", "possible"].map((name) => new Set((a[name] || []).map(([i, j]) => key(i, j))));
  const [links, sure, possible] = sets;
  table.querySelectorAll("td.cell").forEach((td) => {
    const i = a.source_words[Number(td.dataset.col)];
    const j = a.target_words[Number(td.dataset.row)];
    if (i === undefined || j === undefined || i < 0 || j < 0) return;
    const k = key(i, j);
    if (links.has(k)) td.classList.add("link");
    if (sure.has(k)) td.classList.add("gold-sure");
    else if (possible.has(k)) td.classList.add("gold-possible");
  });
  if (kind === "cross") queueMicrotask(() => legend(sentence)); // once the panels are in the page
};

function legend(sentence) {
  const cross = document.getElementById("panel-cross");
  if (!cross || cross.querySelector(".alignment-legend")) return;
  const note = document.createElement("p");
  note.className = "alignment-legend";
  const gold = sentence.alignment.sure && sentence.alignment.sure.length + sentence.alignment.possible.length;
  note.textContent = `${sentence.alignment.method}: red frames are the links found` +
    (gold ? "; a dot is a gold Sure link, a ring a gold Possible one." : ".");
  cross.querySelector(".axes").after(note);
  const attribution = document.getElementById("panel-attribution");
  if (!sentence.kinds.attribution || !attribution) return;
  const label = document.createElement("label");
  label.className = "attribution-toggle";
  const box = document.createElement("input");
  box.type = "checkbox";
  box.id = "attribution-toggle";
  box.addEventListener("change", () => { attribution.hidden = !box.checked; });
  label.append(box, " show attribution beside the attention");
  note.after(label);
  attribution.hidden = true;
}
