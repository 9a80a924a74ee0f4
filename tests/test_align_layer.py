"""The alignment layer (seq2seq/alignment/layer.py, aligner.py): it learns the links it is taught on a
frozen model's states, NULL included; `align-train` keeps it in the run and `align` reads it by
default, the same links as `--method layer`; what cannot be read is one line."""

import numpy as np
import pytest

from seq2seq.alignment.aligner import examples_of, word_mass
from seq2seq.alignment.extract import extract
from seq2seq.alignment.layer import teacher_distribution, train_layer
from seq2seq.alignment.pharaoh import Links
from seq2seq.alignment.score import score
from seq2seq.runs.load import load_run
from tests.conftest import EN


def test_the_teacher_spreads_a_word_over_its_linked_pieces_or_gives_it_to_null():
    source_words, target_words = np.array([0, 0, 1, 2]), np.array([0, 1, 1])
    dist = teacher_distribution(source_words, target_words, {(0, 0), (2, 0)})  # target word 1: none
    assert dist[0].tolist() == pytest.approx([1 / 3, 1 / 3, 0.0, 1 / 3, 0.0])
    assert dist[1].tolist() == dist[2].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]


def test_mass_keeps_a_word_that_looks_at_null_unlinked():
    scores = np.array([[0.7, 0.1], [0.2, 0.1]])  # target word 1 gave most of itself to NULL
    assert extract(scores, "mass", 0.5) == {(0, 0)}
    assert extract(scores, "threshold", 0.5) == {(0, 0), (0, 1)}  # normalised, it would be linked


def test_the_layer_learns_the_links_it_is_taught(run):
    """Sentences paired with themselves reversed word by word, the links their mirror: a frozen
    (untrained) model's states carry which word is where, and the layer learns to read them."""
    model, tokenizer = load_run(run)
    sentences = [f"{e} {e.split()[0]}" for e in EN] * 12
    targets = [" ".join(reversed(s.split())) for s in sentences]
    links = [{(i, len(s.split()) - 1 - i) for i in range(len(s.split()))} for s in sentences]
    examples = examples_of(model, tokenizer, sentences, targets, links)
    trained = train_layer(model.cfg.d_model, [(*e[:3], e[4]) for e in examples], epochs=25)
    untrained = train_layer(model.cfg.d_model, [], epochs=1)
    held_out = examples_of(model, tokenizer, EN, [" ".join(reversed(e.split())) for e in EN])
    gold = [Links.of({(i, len(e.split()) - 1 - i) for i in range(len(e.split()))}) for e in EN]

    def aer(layer) -> float:
        return score([extract(word_mass(layer, e), "mass", 0.3) for e in held_out], gold).aer

    assert aer(trained) < 0.15 < 0.5 < aer(untrained)


def test_align_train_keeps_the_layer_and_align_reads_it_by_default(tiny_run, cli, tmp_path):
    pytest.importorskip("eflomal", reason="align-train's teacher: pip install -e '.[align]'")
    run, data = tiny_run
    (tmp_path / "s").write_text("a dog runs\nthe cat sleeps\n")
    (tmp_path / "t").write_text("un chien court\nle chat dort\n")
    pair = ["--source", tmp_path / "s", "--target", tmp_path / "t"]
    said = cli("align", "--run", run, "--method", "layer", *pair)
    assert said.code == 2 and "has no alignment layer: train one with `seq2seq align-train" in said.err
    said = cli("align-train", "--run", run, "--data-dir", data, "--epochs", "2")
    assert said.code == 0 and "wrote the alignment layer" in said.err, said.err
    default = cli("align", "--run", run, *pair)
    assert default.code == 0 and "aligning with the run's alignment layer" in default.err
    assert default.out == cli("align", "--run", run, "--method", "layer", *pair).out
    documents_place_their_tags_through_it(run, cli, tmp_path)
    (run / "aligner.safetensors").write_bytes(b"not weights")
    said = cli("align", "--run", run, *pair)
    assert said.code == 2 and "aligner.safetensors" in said.err and said.err.count("\n") == 1


def documents_place_their_tags_through_it(run, cli, tmp_path):
    """A document's tags, by `translate` and the server alike, are placed through the run's layer."""
    pytest.importorskip("sentencex", reason='documents need the extra: pip install -e ".[docs]"')
    from fastapi.testclient import TestClient

    from seq2seq.alignment.aligner import layer_method
    from seq2seq.decoding.options import DecodeOptions
    from seq2seq.request.translator import translate_document
    from tests.serve_helpers import make_app

    page = "<p>A <b>dog</b> runs in the <i>park</i>.</p>\n"
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    said = cli("translate", "--run", run, "--max-len", "8", "--input", tmp_path / "page.html")
    model, tokenizer = load_run(run)
    method = layer_method(run)
    done = translate_document(model, tokenizer, page, "html", DecodeOptions(max_len=8), method)
    assert said.code == 0 and said.out == done.text and "align-train" not in said.err, said.err
    assert done.tags == 2 and not any("align-train" in n for n in done.notices)
    without = translate_document(model, tokenizer, page, "html", DecodeOptions(max_len=8))
    assert any("2 tags placed through cross-attention" in n and "align-train" in n for n in without.notices)
    with TestClient(make_app(run, markup=method)) as client:
        body = {"text": page, "format": "html", "max_len": 8}
        assert client.post("/translate", json=body).json()["document"] == done.text


def test_the_threshold_is_chosen_on_the_gold_pairs_turned_round_for_a_fr_en_run(run):
    """The shipped gold set is en->fr: a fr->en run's layer is scored on its pairs turned round
    (French first, each link's words swapped); languages it does not pair are left at 0.5."""
    from seq2seq.alignment.aligner import GOLD, THRESHOLDS, choose_threshold
    from seq2seq.alignment.pharaoh import read_links

    model, tokenizer = load_run(run)
    layer = train_layer(model.cfg.d_model, [], epochs=1)
    assert choose_threshold(layer, model, tokenizer, ("de", "en")) == (0.5, None)
    threshold, dev_aer = choose_threshold(layer, model, tokenizer, ("fr", "en"))
    french, english = (GOLD / "dev.fr").read_text().splitlines(), (GOLD / "dev.en").read_text().splitlines()
    examples = examples_of(model, tokenizer, french, english)
    masses = [None if e is None else word_mass(layer, e) for e in examples]
    gold = read_links(GOLD / "dev.align")
    turned = [Links({(j, i) for i, j in g.sure}, {(j, i) for i, j in g.possible}) for g in gold]

    def aer(links: list[Links], t: float) -> float:
        return score([set() if m is None else extract(m, "mass", t) for m in masses], links).aer

    assert threshold in THRESHOLDS and dev_aer == round(min(aer(turned, t) for t in THRESHOLDS), 4)
    assert dev_aer == round(aer(turned, threshold), 4) != round(aer(gold, threshold), 4)


def test_the_null_takes_the_weight_of_a_word_the_teacher_leaves_unaligned(run):
    """Each target is its sentence's mirror with one more word at the end that no link reaches: the
    layer learns to give that word's weight to NULL, where an untrained layer spreads it over the
    source words."""
    model, tokenizer = load_run(run)
    sentences = [f"{e} {e.split()[0]}" for e in EN] * 12
    targets = [" ".join([*reversed(s.split()), "sun"]) for s in sentences]
    links = [{(i, len(s.split()) - 1 - i) for i in range(len(s.split()))} for s in sentences]
    examples = examples_of(model, tokenizer, sentences, targets, links)
    trained = train_layer(model.cfg.d_model, [(*e[:3], e[4]) for e in examples], epochs=25)
    untrained = train_layer(model.cfg.d_model, [], epochs=1)
    held_out = examples_of(model, tokenizer, EN, [" ".join([*reversed(e.split()), "sun"]) for e in EN])

    def null_share(layer) -> float:  # the last target word's weight left to NULL, on average
        return float(np.mean([1.0 - word_mass(layer, e)[-1].sum() for e in held_out]))

    shares = null_share(trained), null_share(untrained)
    assert shares[0] > 0.7 > 0.5 > shares[1], shares
