"""scripts.reproduce_results names its entries and prints the README's table from the results
file alone: what its options name, and that the table holds the entries asked for, in that order."""

import json

import pytest

from scripts import common, reproduce_results


def entry(pair: str, bleu: float) -> dict:
    scores = {"bleu": bleu, "chrf": 70.0, "bleu_signature": "nrefs:1|tok:13a"}
    row = {"step": 10, "epoch": 1, "val_bleu": bleu - 1, "elapsed_s": 3000.0}
    return {
        "pair": pair,
        "cpu": "test CPU",
        "metrics": [row],
        "test": {"test_2016_flickr": {"greedy": scores, "beam5": scores}},
        "examples": {"A cat.": f"{pair} cat"},
    }


def test_entries_are_the_pairs_or_one_entry_or_each_pair_tagged():
    assert reproduce_results.entry_names(["en-fr", "en-de"], None, None) == ["en-fr", "en-de"]
    assert reproduce_results.entry_names(["en-fr"], "en-fr-avx2", None) == ["en-fr-avx2"]
    assert reproduce_results.entry_names(["en-fr", "en-cs"], None, "avx2") == ["en-fr-avx2", "en-cs-avx2"]
    with pytest.raises(ValueError, match="one pair"):
        reproduce_results.entry_names(["en-fr", "en-de"], "x", None)
    with pytest.raises(ValueError, match="choose one"):
        reproduce_results.entry_names(["en-fr"], "x", "avx2")


def test_the_table_holds_the_entries_named_in_their_order():
    results = {"en-fr": entry("en-fr", 59.8), "en-de-avx2": entry("en-de", 38.1), "x": entry("en-cs", 1.0)}
    rows = [
        line
        for line in reproduce_results.table(results, ["en-de-avx2", "en-fr"]).splitlines()
        if "| en->" in line
    ]
    assert [row.split("|")[1].strip() for row in rows] == ["en->de", "en->fr"]
    assert "38.1 / 70.0" in rows[0] and "59.8 / 70.0" in rows[1]
    assert len(reproduce_results.table(results).splitlines()) > len(
        reproduce_results.table(results, ["x"]).splitlines()
    )
    with pytest.raises(ValueError, match="no entry en-fr-avx2"):
        reproduce_results.table(results, ["en-fr-avx2"])


def test_table_only_prints_and_refuses_the_options_of_a_run(monkeypatch, tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"en-fr": entry("en-fr", 59.8), "en-de": entry("en-de", 38.1)}))
    monkeypatch.setattr(reproduce_results, "RESULTS", results)
    reproduce_results.main(["--table", "en-de"])
    assert "| en->de |" in capsys.readouterr().out
    for argv, message in [
        (["--table", "--tag", "avx2"], "takes no option of a run"),
        (["--table", "en-cs"], "no entry en-cs"),
        (["--tag", ""], "--data-dir is required"),
        (["--data-dir", "d", "--tag", "a/b"], "cannot name an entry"),
        (["--data-dir", "d", "--pairs", "en-fr", "en-de", "--entry", "x"], "one pair"),
    ]:
        with pytest.raises(SystemExit) as stop:
            reproduce_results.main(argv)
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert json.loads(results.read_text()).keys() == {"en-fr", "en-de"}  # nothing ran, nothing written


def test_the_recorded_cpu_names_its_family_and_model():
    """Two VMs that print the same name and flags ran the same recipe at half and at full speed:
    the entry must tell them apart."""
    block = (
        "processor\t: {n}\nvendor_id\t: AuthenticAMD\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n\n"
    )
    zen4 = block.format(n=0, family=25, model=17) + block.format(n=1, family=25, model=17)
    assert common.cpu(zen4) == "AMD EPYC, family 25 model 17 (avx2, avx512f, avx512_bf16)"
    assert common.cpu(block.format(n=0, family=26, model=2)) != common.cpu(zen4)
    assert common.cpu("model name\t: Some CPU\nflags\t\t: fpu sse2\n") == "Some CPU (no AVX2)"
