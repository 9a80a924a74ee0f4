"""The epochs of a streamed corpus (data/streamed.py): read a part at a time, each part's batches
cut from (seed, epoch, part). The training state's `stream` is the place of the part in training:
its number, where it begins in the stream, the pairs before it and its digest; a run resumes by
reading that part again. Every data-parallel process reads the whole stream and cuts the same
batches (checked against rank 0's digest, part by part), then trains on its share of each step's,
as with a stored set."""

from collections.abc import Iterator

from seq2seq.data.batch import token_batches
from seq2seq.data.corpus import FilterReport
from seq2seq.data.streamed import Stream, encoder
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import Seq2SeqError
from seq2seq.training.config import TrainConfig
from seq2seq.training.distributed import World
from seq2seq.training.epoch import EpochPart
from seq2seq.training.resume import TrainingState


class StreamedEpochs:
    def __init__(self, stream: Stream, tokenizer: Tokenizer, cfg: TrainConfig, max_len: int, world: World):
        self.stream, self.cfg, self.world = stream, cfg, world
        self.tokenizer, self.max_len = tokenizer, max_len
        self.report = FilterReport(max_len=max_len)  # what the parts read by this invocation dropped
        self.read = 0  # pairs read by the epoch so far

    def parts(self, state: TrainingState) -> Iterator[EpochPart]:
        """The epoch's parts from where `state` stands; each one sets `state.stream` to its place
        (and `state.batch` to 0 unless it is the part the state was saved in)."""
        cfg, saved, epoch = self.cfg, state.stream, state.epoch
        place = saved or {"part": 0, "start": None, "offset": 0}
        # a part's sources drawn in the chunks a stored epoch draws (data/sampling.py), with the
        # chunks' seeds: part 0 is drawn as the stored set's first pairs are
        draw = lambda number, chunk: (cfg.seed * 1_000_003 + epoch * 1_009 + number * 7_919 + chunk) % 2**32  # noqa: E731
        encode = encoder(self.tokenizer, self.max_len, cfg.subword_alpha, draw)
        parts = self.stream.parts(cfg.stream_part, encode, place["part"], place["start"], place["offset"])
        for part in parts:
            if saved is not None and part.digest != saved["digest"]:
                raise self._changed(place)
            if self.world.size > 1 and self.world.from_main(lambda d=part.digest: d) != part.digest:
                raise Seq2SeqError(
                    f"{self.stream.where}: rank {self.world.rank} read other pairs than rank 0 in part "
                    f"{part.number + 1}; the dataset changed while the processes opened it (start again)"
                )
            if part.number == 0 and not part.report.kept:
                raise Seq2SeqError(
                    f"every one of the first {part.read} training pairs was filtered out (longer than "
                    f"{self.max_len} pieces, empty or mismatched in length)"
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
            # part 0 is cut as a stored epoch is: a stream within one part trains as the same
            # corpus stored does
            key = epoch + part.number * 1_000_003
            batches = token_batches(part.lengths, cfg.max_tokens, cfg.seed, key, part.side_lengths())
            # a card's count below what the stream holds must not run the schedule past its end
            length = max(state.stream_length or self.stream.length or 0, self.read)
            known = bool(state.stream_length or self.stream.length)
            yield EpochPart(
                batches, part.rows, part.offset / length, part.read / length, paced=known, last=part.last
            )
            del part, batches  # before the next part is read: memory holds one part, not two
        if saved is not None:  # the stream ended before the place the run stopped at
            raise self._changed(place)

    def _changed(self, place: dict) -> Seq2SeqError:
        return Seq2SeqError(
            f"{self.stream.where}: the pairs at the place this run stopped (part {place['part'] + 1}, "
            f"after {place['offset']} pairs) are not the ones it trained on; the dataset has changed "
            "(start a new --run)"
        )

    def batches_known(self, part: EpochPart) -> int | None:
        return None  # a stream's are known only once read

    def ended(self, state: TrainingState) -> None:
        """At an epoch's end: the stream's length is known from now on; an empty one is an error."""
        if self.read == 0:
            raise Seq2SeqError(f"{self.stream.where} is empty")
        state.stream_length, state.stream, self.read = self.read, None, 0

    def _count(self, report: FilterReport) -> None:
        for name in ("kept", "empty", "too_long", "bad_ratio"):
            setattr(self.report, name, getattr(self.report, name) + getattr(report, name))


def check_budget(cfg: TrainConfig, stream: Stream, state: TrainingState) -> None:
    """A cooldown paced by epochs alone needs the stream's length: the dataset's card, or an epoch
    read; else one line, before anything is trained (or written, on a new run)."""
    known = stream.length or state.stream_length
    epochs_only = cfg.epochs is not None and cfg.max_steps is None and cfg.max_minutes is None
    if not known and cfg.cooldown > 0 and epochs_only:
        raise Seq2SeqError(
            f"{stream.where}: the stream's length is not known (its card gives no count), so "
            "--epochs cannot pace the learning rate's cooldown; give --max-steps or --max-minutes"
        )
