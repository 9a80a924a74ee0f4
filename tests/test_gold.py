"""The shipped gold alignments (data/alignment/): each set's three files agree line by line, every
link is in range, and its counts are the README's."""

import json
import re
from pathlib import Path

import pytest

from seq2seq.alignment.pharaoh import read_links

GOLD = Path(__file__).resolve().parents[1] / "data" / "alignment"


@pytest.mark.parametrize("name", ["dev", "test", "test2017"])
def test_a_gold_set_is_well_formed(name):
    english, french = (
        (GOLD / f"{name}.{lang}").read_text(encoding="utf-8").splitlines() for lang in ("en", "fr")
    )
    gold = read_links(GOLD / f"{name}.align")
    assert len(english) == len(french) == len(gold) == 100
    for en, fr, links in zip(english, french, gold, strict=True):
        assert links.sure <= links.possible and links.sure
        n_en, n_fr = len(en.split()), len(fr.split())
        assert all(i < n_en and j < n_fr for i, j in links.possible)


def test_the_second_sets_counts_are_the_readmes():
    readme = (GOLD / "README.md").read_text(encoding="utf-8")
    said = re.search(
        r"([\d,]+) Sure and ([\d,]+) only-Possible links over ([\d,]+) words",
        readme[readme.index("The second test set") :],
    )
    gold = read_links(GOLD / "test2017.align")
    words = sum(
        len(line.split())
        for lang in ("en", "fr")
        for line in (GOLD / f"test2017.{lang}").read_text().splitlines()
    )
    counted = sum(len(g.sure) for g in gold), sum(len(g.possible - g.sure) for g in gold), words
    assert tuple(int(n.replace(",", "")) for n in said.groups()) == counted


TRUST = GOLD.parent / "trust"


@pytest.mark.parametrize("part", ["dev", "test"])
def test_the_natural_error_set_is_well_formed(part):
    from scripts.natural_set import marks

    items = [json.loads(line) for line in (TRUST / f"{part}.jsonl").read_text(encoding="utf-8").splitlines()]
    marked = marks(part)
    assert len(items) == 250 and [i["id"] for i in items] == list(marked)
    assert {i["system"] for i in items} == {"tiny-178", "tiny-517", "default-beam5", "default-sample-t1.0",
                                            "default-sample-t1.2"}  # fmt: skip
    for item in items:
        sizes = {"omitted": len(item["source"].split()), "added": len(item["translation"].split())}
        sizes["mistranslated"] = sizes["added"]
        for kind, size in sizes.items():
            assert all(0 <= a <= b < size for a, b in marked[item["id"]][kind]), (item["id"], kind)


def test_the_natural_sets_agreement_is_the_readmes():
    from scripts.natural_set import agreement

    readme = (TRUST / "README.md").read_text(encoding="utf-8")
    kinds = r"omitted ([\d.]+),\s+added ([\d.]+),\s+mistranslated\s+([\d.]+),\s+correct (\d\.\d\d)"
    said = re.search(kinds, readme)
    assert [float(k) for k in said.groups()] == [round(k, 2) for _, _, k in agreement().values()]
