"""The tools on an imported Marian run: fine-tuning it, CTranslate2 export, serving and the
explorer, as on a run trained here."""

import pytest
import torch

from seq2seq.data.pair_tokenizer import PairTokenizer
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.runs.load import load_run
from tests.conftest import EN, FR
from tests.marian_helpers import imported


@pytest.mark.parametrize("separate", [False, True])
def test_an_imported_run_is_fine_tuned_into_a_new_run_never_trained_over(cli, tmp_path, separate):
    from tests.conftest import write_multi30k
    from tests.helpers import TUNE, train_args

    _, start, _, _ = imported(cli, tmp_path, separate=separate)
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    over = cli(*train_args(data, tmp_path / "run", steps=2))
    assert over.code == 2 and "holds an imported model; fine-tune it into a new run" in over.err, over.err
    new = tmp_path / "tuned"
    frozen = ["--freeze", "encoder"] if separate else []
    start_from = ["--init-from", tmp_path / "run", "--data-dir", data, "--run", new, *frozen]
    tuned = cli(*TUNE, "--max-steps", "2", *start_from)
    assert tuned.code == 0, tuned.err
    model, tokenizer = load_run(new)
    assert isinstance(tokenizer, PairTokenizer) and model.cfg.ffn == "silu" and not model.cfg.norm_first
    assert model.cfg == start.cfg
    if separate:  # the encoder's own table is the encoder's: frozen with it
        assert torch.equal(model.source_embed.weight, start.source_embed.weight)
        assert not torch.equal(model.embed.weight, start.embed.weight)
    tokenizers = [(run / "tokenizer.model").read_bytes() for run in (new, tmp_path / "run")]
    assert tokenizers[0] == tokenizers[1]


@pytest.mark.parametrize("separate", [False, True])
def test_an_imported_run_exports_to_ctranslate2_and_shows_its_attention(cli, tmp_path, separate):
    ctranslate2 = pytest.importorskip("ctranslate2")
    from seq2seq.data.special import BOS_ID, PAD_ID
    from seq2seq.export.ctranslate2 import export_ctranslate2

    kwargs = dict(bias=True, tied=False, separate=separate, scaled=not separate)
    _, model, tokenizer, _ = imported(cli, tmp_path, **kwargs)
    ours = translate(model, tokenizer, EN[:4], DecodeOptions(beam=1, max_len=12)).tokens
    engine = ctranslate2.Translator(str(export_ctranslate2(tmp_path / "run", tmp_path / "ct2")), device="cpu")
    never = [tokenizer.id_pieces([i]) for i in (PAD_ID, BOS_ID)]
    results = engine.translate_batch(
        [tokenizer.pieces(s) for s in EN[:4]], beam_size=1, max_decoding_length=12, suppress_sequences=never
    )
    assert [[tokenizer.table[p] for p in r.hypotheses[0]] for r in results] == ours
    shown = cli("translate", "--run", tmp_path / "run", "--show-attention", "--greedy", EN[0])
    assert shown.code == 0 and len(shown.out.strip()) > 0, shown.err


def test_an_imported_run_is_served_and_drawn_as_the_library_does(cli, tmp_path):
    pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
    from fastapi.testclient import TestClient

    from seq2seq.decoding.attention import attention
    from seq2seq.views.explorer import maps_json
    from tests.serve_helpers import make_app

    _, model, tokenizer, _ = imported(cli, tmp_path, separate=True, scaled=False)
    with TestClient(make_app(tmp_path / "run", beam=2)) as client:
        served = client.post("/translate", json={"text": EN[:2]}).json()["translations"]
        forced = client.post("/attention", json={"text": EN[0], "translation": FR[0]}).json()
    assert served == translate(model, tokenizer, EN[:2], DecodeOptions(beam=2)).best
    assert forced["source"] == [*tokenizer.pieces(EN[0]), "</s>"]
    assert forced["target"] == [*tokenizer.pieces(FR[0], "target"), "</s>"]
    library = maps_json(attention(model, tokenizer, EN[0], FR[0]))
    assert forced["kinds"] == library["kinds"]
    page = tmp_path / "explorer.html"
    drawn = cli("translate", "--run", tmp_path / "run", "--greedy", "--attention-html", page, EN[0])
    assert drawn.code == 0 and page.read_text(encoding="utf-8").startswith("<!"), drawn.err
