"""What `seq2seq align` reads, writes and draws besides aligning: gold links (checked against the pairs'
words), links as Pharaoh lines, and the scores against gold as a table or JSON."""

import json
from pathlib import Path

from seq2seq.errors import Seq2SeqError
from seq2seq.files.writing import write_file


def read_gold(gold: Path | None, n_pairs: int):
    if gold is None:
        return None
    from seq2seq.alignment.pharaoh import read_links

    links = read_links(gold)
    if len(links) != n_pairs:
        raise Seq2SeqError(f"{gold} has {len(links)} lines of links for {n_pairs} sentence pairs")
    return links


def check_gold(gold, gold_links, source_words, target_words) -> None:
    if gold is not None:
        from seq2seq.alignment.pharaoh import check_ranges

        check_ranges(gold_links, [len(w) for w in source_words], [len(w) for w in target_words], gold)


def pharaoh(links: set) -> str:
    from seq2seq.alignment.pharaoh import Links

    return Links.of(links).pharaoh()


def print_scores(table: dict, as_json: bool) -> None:
    """One line per method: its precision, recall and AER with the AER's 95% bootstrap interval
    over sentences (and the counts)."""
    if as_json:
        lines = [json.dumps({"method": name, **result.as_json()}) for name, result in table.items()]
    else:
        width = max(map(len, table))
        lines = [f"{'method':<{width}}  precision  recall    AER  95% interval  links"]
        lines += [
            f"{name:<{width}}  {r.precision:9.3f}  {r.recall:6.3f}  {r.aer:5.3f}  "
            f"{r.aer_low:.3f}-{r.aer_high:.3f}  {r.links:5d}"
            for name, r in table.items()
        ]
    write_file("".join(f"{line}\n" for line in lines).encode(), None)


def write_links(args, links: list[set], described: str, gold_links, tagged, targets) -> None:
    """The links as Pharaoh lines (or JSON) to --output or stdout, and the scores against --gold;
    with --markup, each target with the source's tags placed through its links instead."""
    from seq2seq.files.writing import write_lines

    if tagged is not None:
        from seq2seq.documents.placing import place

        placed = [
            place(r, [(0, len(r.text))], [t], [k]).text
            for r, t, k in zip(tagged, targets, links, strict=True)
        ]
        write_lines(placed, args.output)
        return
    if args.output is not None or args.gold is None:
        if args.as_json and args.gold is None:
            lines = [json.dumps(sorted(pair)) for pair in links]
        else:
            lines = [pharaoh(pair) for pair in links]
        write_lines(lines, args.output)
    if args.gold is not None:
        from seq2seq.alignment.score import score

        print_scores({described: score(links, gold_links)}, args.as_json)


def draw(model, found, gold_links, chosen, png: Path | None, html: Path | None) -> None:
    """The pictures of every non-blank pair: the links over the attention, the attribution beside
    (the chosen method's, or integrated gradients beside an attention method)."""
    from seq2seq.alignment import pictures
    from seq2seq.alignment.attribution import attribution
    from seq2seq.files.writing import numbered

    steps = None if chosen.name == "gradxinput" else chosen.steps
    drawn = []
    for number, a in enumerate(found, start=1):
        if a.maps is None:
            continue
        gold = gold_links[number - 1] if gold_links is not None else None
        scores = attribution(model, *a.ids, steps)
        if png is not None:
            path = png if len(found) == 1 else numbered(png, number)
            write_file(pictures.png(a, chosen.layer, chosen.head, gold, scores), path)
        drawn.append(pictures.sentence(a, number, gold, scores))
    if html is not None:
        write_file(pictures.page(drawn, f"{len(drawn)} aligned pairs: {chosen.describe()}").encode(), html)
