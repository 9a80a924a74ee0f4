"""A run's alignment layer (layer.py): fitted to the run's training pairs and eflomal's links of
them (`seq2seq align-train`), kept in the run (aligner.safetensors, aligner.json), and read back
by `seq2seq align`, which aligns with it by default once it is there.

Its threshold is chosen on the shipped gold set's development half where the run translates its
languages (en->fr, or fr->en: the gold pairs turned round) and the source tree is at hand, else
0.5; aligner.json says which."""

import json
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from seq2seq.alignment.layer import AlignLayer, frozen_states, teacher_distribution, train_layer
from seq2seq.alignment.words import piece_words, split_words
from seq2seq.atomic import write_atomic, write_with
from seq2seq.errors import Seq2SeqError
from seq2seq.runs.tensor_file import read_tensors

WEIGHTS, SETTINGS = "aligner.safetensors", "aligner.json"
GOLD = Path(__file__).resolve().parents[2] / "data" / "alignment"  # the shipped gold set (source tree)
THRESHOLDS = tuple(round(0.1 * k, 1) for k in range(1, 10))


def examples_of(model, tokenizer, sources: list[str], targets: list[str], links=None) -> list:
    """Each pair's frozen states and pieces' words (and with `links`, its teacher distribution);
    pairs with a side of no pieces are None."""
    src_ids, tgt_ids = tokenizer.encode(sources), tokenizer.encode(targets, "target")
    limit = model.cfg.max_positions - 1
    src_ids, tgt_ids = [s[:limit] for s in src_ids], [t[:limit] for t in tgt_ids]
    states = frozen_states(model, src_ids, tgt_ids)
    out = []
    for n, (s, t, state) in enumerate(zip(src_ids, tgt_ids, states, strict=True)):
        if not s or not t:
            out.append(None)
            continue
        words = piece_words(tokenizer.id_pieces(s)), piece_words(tokenizer.id_pieces(t))
        dist = None if links is None else teacher_distribution(*words, links[n])
        out.append((*state, words, dist))
    return out


def word_mass(layer: AlignLayer, example) -> np.ndarray:
    """(target words, source words) the mass each target word's pieces give each source word."""
    from seq2seq.alignment.extract import word_scores

    *states, (source_words, target_words), _ = example
    with torch.no_grad():
        pieces = layer(*states).exp()[:, :-1].numpy()  # NULL's share left out
    return word_scores(pieces, source_words, target_words)


def fit(model, tokenizer, pairs: list[tuple[str, str]], langs: tuple[str, str], epochs: int, log=None):
    """The layer fitted to `pairs` (raw lines) and eflomal's links of them, read as the gold set's
    words (`split_words`), and the threshold; `log(message)` says each step."""
    from seq2seq.alignment.baseline import eflomal_links

    say, began = log or (lambda message: None), time.perf_counter()
    split = [(" ".join(split_words(s, langs[0])), " ".join(split_words(t, langs[1]))) for s, t in pairs]
    start = time.perf_counter()
    links = [x.sure for x in eflomal_links([s for s, _ in split], [t for _, t in split])]  # both directions
    say(f"eflomal's links of {len(split)} pairs ({time.perf_counter() - start:.0f} s)")
    start = time.perf_counter()
    sources, targets = [s for s, _ in split], [t for _, t in split]
    examples = [e for e in examples_of(model, tokenizer, sources, targets, links) if e is not None]
    say(f"the model's states of {len(examples)} pairs ({time.perf_counter() - start:.0f} s)")
    training = [(*e[:3], e[4]) for e in examples]

    def told(epoch: int, loss: float) -> None:
        say(f"epoch {epoch} of {epochs}: loss {loss:.3f}")

    layer = train_layer(model.cfg.d_model, training, epochs, log=told)
    threshold, dev_aer = choose_threshold(layer, model, tokenizer, langs)
    seconds = round(time.perf_counter() - began, 1)
    return layer, {"threshold": threshold, "dev_aer": dev_aer, "pairs": len(examples), "epochs": epochs,
                   "teacher": "eflomal, grow-diag-final-and", "seconds": seconds}  # fmt: skip


def choose_threshold(layer, model, tokenizer, langs) -> tuple[float, float | None]:
    """The threshold with the lowest AER on the gold set's development half (its AER), or 0.5 and
    None where the gold set does not fit the run."""
    from seq2seq.alignment.extract import extract
    from seq2seq.alignment.score import score

    half = development_half(langs)
    if half is None:
        return 0.5, None
    sources, targets, gold = half
    masses = [
        None if e is None else word_mass(layer, e) for e in examples_of(model, tokenizer, sources, targets)
    ]
    best = min(
        (score([set() if m is None else extract(m, "mass", t) for m in masses], gold).aer, t)
        for t in THRESHOLDS
    )
    return best[1], round(best[0], 4)


def development_half(langs: tuple[str, str]) -> tuple[list[str], list[str], list] | None:
    """The shipped gold set's development half as a run between `langs` reads it (sources,
    targets, their links; a fr->en run's pairs turned round), or None where it does not fit the
    run or the source tree is not at hand."""
    from seq2seq.alignment.pharaoh import read_links

    if set(langs) != {"en", "fr"} or not (GOLD / "dev.align").is_file():
        return None
    sources, targets = ((GOLD / f"dev.{lang}").read_text(encoding="utf-8").splitlines() for lang in langs)
    gold = read_links(GOLD / "dev.align")
    return sources, targets, gold if langs[0] == "en" else [links.turned() for links in gold]


def save(run: Path, layer: AlignLayer, settings: dict) -> None:
    state = {k: v.contiguous() for k, v in layer.state_dict().items()}
    write_with(Path(run) / WEIGHTS, lambda path: save_file(state, str(path)))
    text = json.dumps({"config": layer.config, **settings}, indent=1) + "\n"
    write_atomic(Path(run) / SETTINGS, text.encode("utf-8"))


def load(run: Path) -> AlignLayer | None:
    """The run's layer (its `threshold` set), or None where it has none."""
    weights, settings = Path(run) / WEIGHTS, Path(run) / SETTINGS
    if not weights.is_file():
        return None
    try:
        kept = json.loads(settings.read_text(encoding="utf-8"))
        layer = AlignLayer(**kept["config"])
        layer.load_state_dict(read_tensors(weights)[0])
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise Seq2SeqError(
            f"{weights}: not an alignment layer ({e}); train it again with align-train"
        ) from None
    layer.threshold = float(kept["threshold"])
    return layer.eval()


def layer_method(run: Path):
    """The alignment Method that reads the run's layer (`--method layer`), or None where the run
    has none."""
    from seq2seq.alignment.methods import Method

    layer = load(run)
    return None if layer is None else Method("layer", aligner=layer)
