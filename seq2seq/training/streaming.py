"""The epochs of a streamed corpus (data/streamed.py): read a part at a time, each part's batches
cut from (seed, epoch, part). The training state's `stream` is the place of the part in training:
its number, where it begins in the stream, the pairs before it and its digest; a run resumes by
reading that part again. Every data-parallel process reads the whole stream and cuts the same
batches, then trains on its share of each step's (as with a stored set)."""

from collections.abc import Iterator
from pathlib import Path

from seq2seq.data.batch import token_batches
from seq2seq.data.corpus import FilterReport
from seq2seq.data.streamed import Stream, encoder
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import Seq2SeqError
from seq2seq.training.config import TrainConfig
from seq2seq.training.epoch import EpochPart

PLACE = {"part": int, "start": (dict, type(None)), "offset": int, "digest": str}  # the state's `stream`


class StreamedEpochs:
    def __init__(self, stream: Stream, tokenizer: Tokenizer, cfg: TrainConfig, max_len: int):
        self.stream, self.cfg = stream, cfg
        self.tokenizer, self.max_len = tokenizer, max_len
        self.report = FilterReport(max_len=max_len)  # what the parts read by this invocation dropped
        self.read = 0  # pairs read by the epoch so far

    def check_budget(self, state) -> None:
        """A schedule paced by epochs needs the stream's length: the dataset's card or a read epoch."""
        cfg = self.cfg
        known = self.stream.length or state.stream_length
        if not known and cfg.cooldown > 0 and cfg.max_steps is None and cfg.max_minutes is None:
            raise Seq2SeqError(
                f"{self.stream.where}: the stream's length is not known (its card gives no count), so "
                "--epochs cannot pace the learning rate's cooldown; give --max-steps or --max-minutes"
            )

    def parts(self, state) -> Iterator[EpochPart]:
        """The epoch's parts from where `state` stands; each one sets `state.stream` to its place
        (and `state.batch` to 0 unless it is the part the state was saved in)."""
        cfg, saved, epoch = self.cfg, state.stream, state.epoch
        place = saved or {"part": 0, "start": None, "offset": 0}
        draw = lambda number: (cfg.seed * 1_000_003 + epoch * 1_009 + number) % 2**32  # noqa: E731
        encode = encoder(self.tokenizer, self.max_len, cfg.subword_alpha, draw)
        parts = self.stream.parts(cfg.stream_part, encode, place["part"], place["start"], place["offset"])
        for part in parts:
            if saved is not None and part.digest != saved["digest"]:
                raise Seq2SeqError(
                    f"{self.stream.where}: the pairs at the place this run stopped (part {part.number + 1}, "
                    f"after {part.offset} pairs) are not the ones it trained on; the dataset has changed "
                    "(start a new --run)"
                )
            if saved is None:
                state.batch = 0
            saved = None
            state.stream = {
                "part": part.number,
                "start": part.start,
                "offset": part.offset,
                "digest": part.digest,
            }
            self.read = part.offset + part.read
            self._count(part.report)
            # part 0 is cut as a stored epoch is, and drawn as its first chunk (data/sampling.py): a
            # stream within one part trains as the same corpus stored does
            key = epoch + part.number * 1_000_003
            batches = token_batches(part.lengths, cfg.max_tokens, cfg.seed, key, part.side_lengths())
            length = state.stream_length or self.stream.length
            share = (part.offset / length, part.read / length) if length else (0.0, 0.0)
            yield EpochPart(batches, part.rows, *share)

    def batches_known(self, part: EpochPart) -> int | None:
        return None  # a stream's are known only once read

    def ended(self, state) -> None:
        """At an epoch's end: the stream's length is known from now on; an empty one is an error."""
        if self.read == 0:
            raise Seq2SeqError(f"{self.stream.where} is empty")
        if not self.report.kept and not state.step:
            raise Seq2SeqError(f"every one of the {self.read} training pairs was filtered out")
        state.stream_length, state.stream, self.read = self.read, None, 0

    def _count(self, report: FilterReport) -> None:
        for name in ("kept", "empty", "too_long", "bad_ratio"):
            setattr(self.report, name, getattr(self.report, name) + getattr(report, name))


def check_place(value: object, where: Path) -> None:
    """A saved `stream` is None or a place as `StreamedEpochs.parts` writes it; else one line."""
    if value is None:
        return
    good = isinstance(value, dict) and set(value) == set(PLACE)
    good = good and all(isinstance(value[k], t) and not isinstance(value[k], bool) for k, t in PLACE.items())
    if not good or value["part"] < 0 or value["offset"] < 0:
        raise Seq2SeqError(f"{where}: the trainer state's stream place is not one this version writes")
