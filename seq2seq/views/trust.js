// How far to trust the sentence, over the explorer's strips (the "trust" field `translate
// --attention-html --confidence` adds; a sentence without it gets nothing drawn):
// trust = {score, omission, hallucination, flags, unsure_below, uncovered_below,
//          target: [{word, logprob, unsure} | null a piece], source: [{word, coverage, uncovered} | null]}.
// An output piece of a word to check is underlined, a source piece of a word the translation left
// uncovered is outlined, and hovering either says why (its title); a line under the translation
// gives the sentence's score, the chance of an omission and of a hallucination, and its flags.
// explorer.js calls show(sentence) once it has drawn a sentence.
"use strict";

(function () {
  window.seq2seqTrust = { show };

  const percent = (p) => (100 * p).toFixed(p >= 0.1 ? 0 : 1) + "%";

  function show(sentence) {
    const old = document.getElementById("trust-row");
    if (old) old.remove();
    const trust = sentence.trust;
    if (!trust) return;
    const row = document.createElement("p");
    row.id = "trust-row";
    row.className = "trust-row" + (trust.flags.length ? " flagged" : "");
    row.textContent = `confidence ${trust.score.toFixed(3)} a piece · omission ${percent(trust.omission)} · ` +
      `hallucination ${percent(trust.hallucination)} · ` +
      (trust.flags.length ? `flags: ${trust.flags.join(", ")}` : "no flags");
    document.querySelector(".translation-row").after(row);
    mark("target", trust.target, (w) => w.unsure, (w) =>
      `"${w.word}": log-probability ${w.logprob.toFixed(2)}` +
      (w.unsure ? `, below ${trust.unsure_below.toFixed(2)}: check this word` : ""));
    mark("source", trust.source, (w) => w.uncovered, (w) =>
      `"${w.word}": the output attends to it ${w.coverage.toFixed(2)} pieces' worth` +
      (w.uncovered ? `, below ${trust.uncovered_below}: it may be left out` : ""));
  }

  // Each chip of `side` gets its word's title, and the class when `flagged` says so.
  function mark(side, words, flagged, why) {
    const chips = document.querySelectorAll(`#${side}-strip .piece`);
    chips.forEach((chip, i) => {
      const w = words[i];
      if (!w) return;
      chip.title = why(w);
      if (flagged(w)) chip.classList.add(side === "target" ? "unsure" : "uncovered");
    });
  }
})();
