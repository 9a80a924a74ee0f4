"""`seq2seq import` of an OPUS-MT-sized Marian model: its time and peak memory, then translation
speed on the imported run against transformers' own `generate` on the same checkpoint, side by
side in one run.

The checkpoint is built here with random weights in opus-mt-en-fr's shape (d_model 512, 6 + 6
layers, 8 heads, 2,048-wide swish blocks, 59,514 pieces: about 75M parameters), with two
SentencePiece models trained on the corpus's training captions and a vocabulary of their pieces
filled up to that size. A random model never ends a sentence, so both decoders run every sentence
to `--max-len` pieces: equal work, told apart by speed alone.

    python -m scripts.bench_import --data-dir ../shared/corpora/multi30k
"""

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sentencepiece as spm
import torch

from scripts.common import cpu, length_sorted_batches, median_time
from seq2seq.data.batch import pad
from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.search import DecodeOptions, search_in_batches, source_ids
from seq2seq.runs.load import load_run

SHAPE = dict(
    vocab_size=59514, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
    decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512,
    activation_function="swish", scale_embedding=True,
)  # fmt: skip


def _spm(texts: list[str], size: int) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.Train(
        sentence_iterator=iter(texts), model_writer=model, vocab_size=size, minloglevel=2
    )
    return model.getvalue()


def opus_sized_folder(folder: Path, pairs) -> None:
    import transformers

    source, target = _spm([s for s, _ in pairs], 8000), _spm([t for _, t in pairs], 8000)
    pieces = []
    for model in (source, target):
        processor = spm.SentencePieceProcessor(model_proto=model)
        pieces += [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
    pieces = [p for p in dict.fromkeys(pieces) if p not in ("<unk>", "<s>", "</s>", "<pad>")]
    pieces += [f"▁filler{i}" for i in range(SHAPE["vocab_size"] - 3 - len(pieces))]
    vocab = {"</s>": 0, "<unk>": 1} | {p: i + 2 for i, p in enumerate(pieces)} | {"<pad>": len(pieces) + 2}
    pad_id = vocab["<pad>"]
    config = transformers.MarianConfig(
        **SHAPE, pad_token_id=pad_id, eos_token_id=0, decoder_start_token_id=pad_id, bad_words_ids=[[pad_id]]
    )
    torch.manual_seed(0)
    model = transformers.MarianMTModel(config)
    with torch.no_grad():  # EOS's logit 0 where the pieces' spread wide: never chosen, by either
        model.model.shared.weight[0].zero_()
    model.save_pretrained(folder)
    (folder / "source.spm").write_bytes(source)
    (folder / "target.spm").write_bytes(target)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"source_lang": "en", "target_lang": "fr"}))


def timed_import(folder: Path, run: Path) -> tuple[float, float]:
    """(seconds, peak resident MB) of `seq2seq import` in a process of its own."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "seq2seq", "import", str(folder), str(run)], check=True)
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def ours(model, ids: list[list[int]], beam: int, args) -> None:
    options = DecodeOptions(beam=beam, max_len=args.max_len, batch_size=args.batch_size)
    list(search_in_batches(model, ids, list(range(len(ids))), options))


def theirs(hf, ids: list[list[int]], order: torch.Tensor, beam: int, args) -> None:
    """generate() on the same length-sorted batches, in Marian's ids (our PAD is their PAD)."""
    pad_id = int(order[0])
    with torch.inference_mode():
        for batch in length_sorted_batches(ids, args.batch_size):
            src = order[pad([ids[i] for i in batch])]
            hf.generate(
                src, attention_mask=src != pad_id, num_beams=beam, do_sample=False, early_stopping=True,
                max_new_tokens=args.max_len, min_new_tokens=args.max_len,
            )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(cpu(), f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    import transformers

    pairs = load_pairs("multi30k", "train", "en", "fr", args.data_dir)
    test = load_pairs("multi30k", "test_2016_flickr", "en", "fr", args.data_dir)
    lines = [s for s, _ in test][: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        folder, run = Path(tmp) / "marian", Path(tmp) / "run"
        opus_sized_folder(folder, pairs)
        seconds, peak = timed_import(folder, run)
        model, tokenizer = load_run(run, packed=True)
        parameters = sum(p.numel() for p in model.parameters())
        print(f"import: {seconds:.1f} s, peak resident {peak:.0f} MB, {parameters / 1e6:.1f}M parameters")
        hf = transformers.MarianMTModel.from_pretrained(folder).eval()
        order = torch.from_numpy(tokenizer.marian_ids)
        ids = source_ids(model, tokenizer, lines)[0]
        for beam in (1, 5):
            ours_s, _ = median_time(lambda b=beam: ours(model, ids, b, args), args.repeats)
            theirs_s, _ = median_time(lambda b=beam: theirs(hf, ids, order, b, args), args.repeats)
            print(
                f"beam {beam}: seq2seq {ours_s:.2f} s, transformers generate {theirs_s:.2f} s "
                f"({len(ids)} sentences to {args.max_len} pieces; ours / theirs = {ours_s / theirs_s:.2f})"
            )


if __name__ == "__main__":
    main()
