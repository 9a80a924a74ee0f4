"""What `seq2seq align` reads and prints besides the pairs: gold links (checked against the pairs'
words), links as Pharaoh lines, and the scores against gold as a table or JSON."""

import json
from pathlib import Path

from seq2seq.cli.outputs import write_file
from seq2seq.errors import Seq2SeqError


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
    """One line per method: its P, R and AER (and the counts) in %."""
    if as_json:
        lines = [json.dumps({"method": name, **result.as_json()}) for name, result in table.items()]
    else:
        width = max(map(len, table))
        lines = [f"{'method':<{width}}  precision  recall    AER  links"]
        lines += [
            f"{name:<{width}}  {r.precision:9.3f}  {r.recall:6.3f}  {r.aer:5.3f}  {r.links:5d}"
            for name, r in table.items()
        ]
    write_file("".join(f"{line}\n" for line in lines).encode(), None)
