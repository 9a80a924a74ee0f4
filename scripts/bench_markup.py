"""Is markup placed where a person would place it? Tags wrapped around source words of the shipped
gold alignment set are placed into the reference translation (seq2seq/documents/placing.py) and
compared with the span the gold links give.

Construction: in every pair of `data/alignment/{dev,test}`, every span of 1, 2 and 3 consecutive
source words of which at least one word has a gold link (Sure or Possible) is wrapped in a tag,
one tag at a time. The gold span is the first to the last target word linked (Sure or Possible)
to the span's words. A placement is right when its tag encloses exactly those words. Each source
of links places the same tags with the same code: the run's cross-attention (the method and layer,
mean of heads, that place most dev tags right: attention or shifted by one, each layer), the head
guided training taught, the run's alignment layer (where `seq2seq align-train` fitted one) at its
own threshold, eflomal's (with the
training corpus beside, the `align` extra) and a naive rule (each source word at the same relative
position in the target). The table reports both halves, every choice made on dev alone.

Then the same tags into the model's own beam-5 translation of each source ("into its output"): the
gold span there is the output's words matched to the gold span's reference words (the longest
matching word sequences of output and reference, lowercased: difflib); a tag whose reference words
the output does not hold is not scored (the note counts them).

    python -m scripts.bench_markup --run runs/multi30k-en-fr --data-dir "$SEQ2SEQ_DATA_DIR" [--figure]
"""

import argparse
from pathlib import Path

from scripts import figures
from scripts.common import REPO, cpu
from seq2seq.alignment.pharaoh import read_links
from seq2seq.alignment.words import split_words
from seq2seq.documents.markup import Run
from seq2seq.documents.placing import place

GOLD = REPO / "data" / "alignment"


def spans_of(words: int, linked: set[int]) -> list[tuple[int, int]]:
    """Every span of 1, 2 and 3 words with at least one gold-linked word."""
    return [
        (start, start + n)
        for n in (1, 2, 3)
        for start in range(words - n + 1)
        if any(i in linked for i in range(start, start + n))
    ]


def tagged(words: list[str], span: tuple[int, int]) -> Run:
    run = Run()
    for i, word in enumerate(words):
        if i == span[0]:
            run.opening("<b>")
        run.add(word)
        if i == span[1] - 1:
            run.closing("</b>")
        run.add(" " if i < len(words) - 1 else "")
    return run


def placed_span(run: Run, target: str, links: set) -> tuple[int, int] | None:
    """The target words the tag encloses after placing it, (first, last + 1); None if unplaced."""
    text = place(run, [(0, len(run.text))], [target], [links]).text
    words = text.split()
    inside = [k for k, w in enumerate(words) if _inside(words, k)]
    return (inside[0], inside[-1] + 1) if inside else None


def _inside(words: list[str], k: int) -> bool:
    opened = sum(w.count("<b>") - w.count("</b>") for w in words[:k])
    word = words[k]
    return opened > 0 or (word.startswith("<b>") and word.replace("<b>", "").replace("</b>", ""))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", help="Multi30k: eflomal aligns with the training corpus beside")
    p.add_argument("--figure", action="store_true", help="write docs/figures/markup.json")
    args = p.parse_args()
    commit = figures.clean_commit(figures.DEPENDS["markup"]) if args.figure else None
    import seq2seq
    from seq2seq.alignment.aligner import load
    from seq2seq.alignment.methods import Method
    from seq2seq.alignment.runs import trained_method
    from seq2seq.documents.translate import placing_rule

    model, tokenizer = seq2seq.load_run(args.run)
    print(f"CPU: {cpu()}; run {args.run}")
    aligner = load(args.run)  # the run's alignment layer (align-train), where it has one
    guided = trained_method(Path(args.run), model, 32)  # the head guided training taught, if any
    method = choose(model, tokenizer)
    columns = ["half", "tags", f"the run's attention ({method.name}, layer {method.layer})"]
    if guided is not None:
        columns.append(f"its guided head ({guided.name}, layer {guided.layer} head {guided.head})")
    if aligner is not None:
        columns.append(f"its alignment layer (at {aligner.threshold:g})")
    columns.append("eflomal")
    columns.append("same relative position")
    print("| " + " | ".join(columns) + " |")
    rows = []
    readings = [method] if guided is None else [method, guided]
    readings += [] if aligner is None else [Method("layer", aligner=aligner)]
    unscored = []
    for half, into in [(h, i) for i in ("the reference", "its output") for h in ("dev", "test")]:
        sources, references, gold = read_half(half)
        targets, matched = references, None
        if into == "its output":
            targets = [
                " ".join(split_words(t, "fr")) for t in seq2seq.translate(model, tokenizer, sources).best
            ]
            matched = [word_matches(r, t) for r, t in zip(references, targets, strict=True)]
        ours = [  # each reading's links drawn as `translate` draws them to place tags
            [a.links for a in seq2seq.align(model, tokenizer, sources, targets, m, *placing_rule(m))]
            for m in readings
        ]
        naive = [
            {
                (i, min(len(t.split()) - 1, round(i * len(t.split()) / len(s.split()))))
                for i in range(len(s.split()))
            }
            for s, t in zip(sources, targets, strict=True)
        ]
        total, rights = 0, []
        for links in (*ours, eflomal(sources, targets, args.data_dir), naive):
            total, right, skipped = accuracy(sources, targets, gold, links, matched)
            rights.append(f"{right / total:.1%}")
        unscored += [f"{half} {skipped}"] if matched else []
        rows.append([f"{half}, into {into}", str(total), *rights])
        print("| " + " | ".join(rows[-1]) + " |")
    if args.figure:
        note = (
            f"{args.run}: in each pair of the shipped gold set's halves, a tag around every span of 1, 2 "
            "and 3 source words with a gold link, placed into the reference translation through each "
            "source of links (documents/placing.py); a cell: the tags placed exactly around the span "
            "the gold links (Sure and Possible) give. The attention's method and layer (mean of heads) "
            "chosen on dev; the "
            "alignment layer is what `translate` and the server place tags with, else the guided head; "
            "eflomal (one run: it seeds itself) trained with the corpus beside. Into its output: the "
            "model's beam-5 translation, the gold span its words matched to the reference's (difflib); "
            f"tags not scored there, the output holding none of their reference words: {', '.join(unscored)}."
        )
        figures.record("markup", columns, rows, note, commit)


def read_half(half: str):
    sources = (GOLD / f"{half}.en").read_text(encoding="utf-8").splitlines()
    targets = (GOLD / f"{half}.fr").read_text(encoding="utf-8").splitlines()
    return sources, targets, read_links(GOLD / f"{half}.align")


def word_matches(reference: str, output: str) -> dict[int, int]:
    """Reference word index -> output word index, for the words of the longest matching word
    sequences of the two (lowercased)."""
    from difflib import SequenceMatcher

    a, b = reference.lower().split(), output.lower().split()
    blocks = SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return {m.a + k: m.b + k for m in blocks for k in range(m.size)}


def accuracy(sources, targets, gold, links, matched=None) -> tuple[int, int, int]:
    """(tags, tags placed around exactly the gold span, tags not scored). `matched`: each pair's
    reference-to-target word matches, where the target is not the reference."""
    total = right = skipped = 0
    for n, (source, target) in enumerate(zip(sources, targets, strict=True)):
        linked = gold[n].possible | gold[n].sure
        for span in spans_of(len(source.split()), {i for i, _ in linked}):
            to = [j for i, j in linked if span[0] <= i < span[1]]
            if matched is not None:
                to = [matched[n][j] for j in to if j in matched[n]]
                if not to:
                    skipped += 1
                    continue
            total += 1
            right += placed_span(tagged(source.split(), span), target, links[n]) == (min(to), max(to) + 1)
    return total, right, skipped


def choose(model, tokenizer):
    """The attention method and layer (mean of heads) that place most dev tags right."""
    import seq2seq
    from seq2seq.alignment.methods import Method
    from seq2seq.documents.translate import placing_rule

    sources, targets, gold = read_half("dev")
    layers = seq2seq.align(model, tokenizer, sources[:1], targets[:1])[0].maps.layers("cross")
    scored = []
    for name in ("attention", "shift"):
        for layer in range(1, layers + 1):
            method = Method(name, layer)
            found = seq2seq.align(model, tokenizer, sources, targets, method, *placing_rule(method))
            scored.append((accuracy(sources, targets, gold, [a.links for a in found])[1], -layer, method))
    return max(scored, key=lambda x: x[:2])[2]


def eflomal(sources: list[str], targets: list[str], data_dir: str | None) -> list[set]:
    from seq2seq.alignment.baseline import eflomal_links, eflomal_with_corpus

    if data_dir is None:
        return [set(links.sure) for links in eflomal_links(sources, targets)]
    found, _ = eflomal_with_corpus(sources, targets, "multi30k", "en", "fr", data_dir)
    return [set(links.sure) for links in found]


if __name__ == "__main__":
    main()
