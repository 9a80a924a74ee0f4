"""Training throughput against JoeyNMT 2.3, the closest peer, on this machine: target tokens/s of
the training step for the `small` shape, the same Multi30k pairs and the same joint SentencePiece
model, each system in a process of its own, taking turns.

    python -m venv --system-site-packages /tmp/joey
    /tmp/joey/bin/pip install joeynmt==2.3.0 importlib_metadata "sentencepiece<0.2"
    python -m scripts.against_joeynmt --run runs/multi30k-en-fr --data-dir ../shared/corpora/multi30k \
        --joeynmt-python /tmp/joey/bin/python

JoeyNMT gets a venv of its own because it pins protobuf<3.21 (transformers wants a newer one) and
calls SentencePiece's `SetVocabulary`, gone in sentencepiece 0.2; with --system-site-packages it
runs on the same torch. It trains with a standard Transformer recipe in JoeyNMT's own terms
(Adam, inverse-sqrt warmup of 1000 steps to 7e-4, label smoothing 0.1, token batches of 4096,
pre-LN, tied embeddings, dropout 0.1) for --minutes, with no validation in that window, and its
log's "Tokens per Sec" lines (target tokens over training time, every 10 steps) give its figure:
the median window after the first. Ours is `seq2seq train --max-steps` on a fresh run with the same
tokenizer (subword sampling, fused AdamW, token budget 3072: the default recipe), whose metrics row
gives target tokens over training seconds, the first steps included (which can only lower it).
Both count target tokens without padding. Prints the CPU and its flags first.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import sentencepiece as spm
import torch

from scripts.common import cpu
from seq2seq.data.corpus import load_pairs
from seq2seq.device import precision_note, use_bf16
from seq2seq.runs.files import read_metrics

TOKENS_PER_SEC = re.compile(r"Tokens per Sec:\s+(\d+)")


def write_corpus(data_dir: str, src: str, tgt: str, out: Path) -> None:
    """train.<lang> / dev.<lang> plain files, JoeyNMT's "plain" dataset."""
    for split, name in (("train", "train"), ("val", "dev")):
        pairs = load_pairs("multi30k", split, src, tgt, data_dir)
        for lang, side in ((src, 0), (tgt, 1)):
            (out / f"{name}.{lang}").write_text("".join(p[side] + "\n" for p in pairs))


def joeynmt_config(work: Path, tokenizer: Path, src: str, tgt: str, batch_tokens: int) -> dict:
    """The `small` shape and the recipe above, over our tokenizer's pieces."""
    sp = spm.SentencePieceProcessor(model_file=str(tokenizer))
    vocab = work / "vocab.txt"
    vocab.write_text("".join(sp.id_to_piece(i) + "\n" for i in range(sp.get_piece_size())))
    side = lambda lang: {  # noqa: E731
        "lang": lang,
        "level": "bpe",
        "voc_file": str(vocab),
        "tokenizer_type": "sentencepiece",
        "tokenizer_cfg": {"model_file": str(tokenizer)},
        "max_length": 100,
    }
    # JoeyNMT puts unk, pad, bos, eos first, in that order (ours: pad, unk, bos, eos): same pieces
    specials = {
        f"{name}_token": sp.id_to_piece(i) for name, i in (("pad", 0), ("unk", 1), ("bos", 2), ("eos", 3))
    }
    half = {"embeddings": {"embedding_dim": 256, "scale": True}, "hidden_size": 256, "ff_size": 1024}
    stack = half | {
        "type": "transformer",
        "num_layers": 3,
        "num_heads": 4,
        "dropout": 0.1,
        "layer_norm": "pre",
    }
    return {
        "name": "joeynmt-small",
        "random_seed": 1,
        "data": {
            "train": str(work / "train"),
            "dev": str(work / "dev"),
            "dataset_type": "plain",
            "src": side(src),
            "trg": side(tgt),
            "special_symbols": specials,
        },
        "training": {
            "model_dir": str(work / "model"),
            "overwrite": True,
            "optimizer": "adam",
            "adam_betas": [0.9, 0.98],
            "normalization": "tokens",
            "scheduling": "warmupinversesquareroot",
            "learning_rate": 7e-4,
            "learning_rate_warmup": 1000,
            "learning_rate_min": 0.0,  # (PyYAML reads 1e-08 as a string: JSON writes no dot)
            "label_smoothing": 0.1,
            "clip_grad_norm": 1.0,  # as ours
            "loss": "crossentropy",
            "batch_size": batch_tokens,
            "batch_type": "token",
            "epochs": 100,
            "validation_freq": 10**9,  # none inside the timed window
            "logging_freq": 10,
            "use_cuda": False,
            "shuffle": True,
        },
        "testing": {
            "eval_metrics": ["bleu"],
            "beam_size": 1,
            "batch_size": batch_tokens,
            "batch_type": "token",
        },
        "model": {"tied_embeddings": True, "tied_softmax": True, "encoder": stack, "decoder": stack},
    }


def run_joeynmt(python: str, config: Path, minutes: float, env: dict) -> list[int]:
    """Train for `minutes`, then stop it; the tokens/s of every logged window of 10 steps."""
    log = config.parent / "joeynmt.out"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [python, "-m", "joeynmt", "train", str(config)], stdout=out, stderr=out, env=env
        )
        try:
            proc.wait(timeout=minutes * 60)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()
    rates = [int(m) for m in TOKENS_PER_SEC.findall(log.read_text())]
    if len(rates) < 2:
        sys.exit(f"JoeyNMT logged no training windows; its output is in {log}")
    return rates


def run_ours(run: Path, work: Path, args, pair: tuple[str, str], fp32: bool, env: dict) -> float:
    """`seq2seq train --max-steps` on a fresh run that reuses `run`'s tokenizer; target tokens/s."""
    ours = work / ("ours-fp32" if fp32 else "ours")
    shutil.rmtree(ours, ignore_errors=True)
    ours.mkdir()
    shutil.copy(run / "tokenizer.model", ours / "tokenizer.model")
    command = [sys.executable, "-m", "seq2seq", "train", "--run", str(ours), "--data-dir", args.data_dir]
    command += ["--src", pair[0], "--tgt", pair[1], "--max-steps", str(args.steps), "--average", "1"]
    command += ["--ffn", "relu", "--ff", "1024"]  # JoeyNMT's block and width: the same shape
    subprocess.run(command + (["--fp32"] if fp32 else []), check=True, capture_output=True, env=env)
    return read_metrics(ours)[-1]["tokens_per_s"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True, help="a run directory: its tokenizer and language pair")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--joeynmt-python", default=sys.executable, help="a Python that imports joeynmt")
    p.add_argument("--minutes", type=float, default=4, help="JoeyNMT's timed training per round")
    p.add_argument("--steps", type=int, default=150, help="our training steps per round")
    p.add_argument("--batch-tokens", type=int, default=4096, help="JoeyNMT's token batch")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    run = Path(args.run)
    src, tgt = (json.loads((run / "config.json").read_text())["train"][k] for k in ("src", "tgt"))
    env = os.environ | {"OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    print(f"CPU: {cpu()}, {args.threads} threads, torch {torch.__version__}")
    print(f"ours by default: {precision_note(torch.device('cpu'), True)}")
    work = Path(tempfile.mkdtemp(prefix="against-joeynmt-"))
    write_corpus(args.data_dir, src, tgt, work)
    config = work / "joeynmt.yaml"  # JSON is YAML
    config.write_text(json.dumps(joeynmt_config(work, run / "tokenizer.model", src, tgt, args.batch_tokens)))
    variants = {"ours fp32": True}
    if use_bf16(torch.device("cpu"), True):
        variants["ours bf16"] = False
    figures: dict[str, list[float]] = {"joeynmt": [], **{name: [] for name in variants}}
    for round_ in range(1, args.rounds + 1):
        rates = run_joeynmt(args.joeynmt_python, config, args.minutes, env)
        figures["joeynmt"].append(statistics.median(rates[1:]))
        print(f"round {round_}: joeynmt {figures['joeynmt'][-1]:.0f} target tokens/s, {len(rates)} windows")
        for name, fp32 in variants.items():
            figures[name].append(run_ours(run, work, args, (src, tgt), fp32, env))
            print(f"round {round_}: {name} {figures[name][-1]:.0f} target tokens/s")
    joey = statistics.median(figures["joeynmt"])
    print("\n| system | target tokens/s (median of rounds) | ratio to JoeyNMT |\n|---|---|---|")
    for name, values in figures.items():
        print(f"| {name} | {statistics.median(values):.0f} | {statistics.median(values) / joey:.2f} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
