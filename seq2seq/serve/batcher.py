"""Dynamic batching: requests from many clients meet in one queue, and ONE worker thread runs the
model on them together, so N concurrent one-line requests cost about one batched decode, not N.

The worker takes the oldest request, then keeps collecting until it holds `max_batch` sentences or
`max_wait_ms` have passed since that request arrived (requests that queued while the model was
busy have waited long enough already: they go at once). What it collected is split into groups of
identical decode options, and each group is one call of the library's `translate` (or
`attention_batch`): the same code path as `seq2seq translate`, so the same output.

Answers go back through `concurrent.futures.Future`s, which the event loop awaits without ever
blocking on the model. The model is touched by the worker thread alone. A job whose future was
cancelled before the worker reached it (its client left, or its deadline passed) is dropped
unworked. The queue is bounded by the app, which asks `pending_work` (each job's lines x beam,
submitted and not answered) before it submits, and answers 503 beyond its bound.
"""

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import astuple, dataclass, replace

from seq2seq.allocator import release_freed_memory
from seq2seq.decoding.attention import attention_batch
from seq2seq.decoding.search import DecodeOptions
from seq2seq.request.translator import Translator
from seq2seq.trust.signals import check_pairs

IDLE_SECONDS = 1.0
MAX_WAIT_SECONDS = 10.0  # a batch waits for company at most this long, whatever --max-wait-ms says


@dataclass
class Job:
    """One request: its lines, how to decode them, and where its answer goes."""

    work: str  # "translate": a request's Answer (request/); "attention": list[AttentionMaps];
    # "check": list[Signals]
    lines: list[str]
    options: DecodeOptions
    translations: list[str] | None = None  # attention of given (forced) translations
    prefixes: list[str] | None = None  # "attention": the text its translation starts with
    alternatives: int = 0  # "attention": the alternatives at each output position, that many
    trace: bool = False  # "attention": the beam's record too
    plan: object = None  # "translate": the request checked (a translator.py Plan; `lines`: what it reads)
    future: Future | None = None
    arrived: float = 0.0  # time.monotonic() when queued

    @property
    def weight(self) -> int:
        """What the job weighs in the queue: its lines x its beam (or its samples)."""
        return len(self.lines) * self.options.rows

    def key(self) -> tuple:
        """Jobs with equal keys are decoded together in one call."""
        steered = (self.plan.forced is not None, self.plan.banked is not None) if self.plan else ()
        given = self.translations is not None, self.prefixes is not None, *steered
        return self.work, *given, self.alternatives, self.trace, astuple(self.options)


class Batcher:
    """The queue and its one worker thread; `submit` from any thread, `stop` drains then ends."""

    def __init__(
        self,
        model,
        tokenizer,
        max_batch: int = 64,
        max_wait_ms: float = 5.0,
        on_batch: Callable[[str, int], None] | None = None,
        markup=None,
        calibration=None,
    ):
        self.model, self.tokenizer = model, tokenizer
        # the one entry point of a request; `markup`: how a document's tags are placed
        self.translator = Translator(model, tokenizer, calibration, markup)
        self.max_batch, self.max_wait = max_batch, min(max_wait_ms / 1000, MAX_WAIT_SECONDS)
        self.on_batch = on_batch  # called with (work, sentences) before each model call: tests count them
        self.queue: queue.Queue[Job | None] = queue.Queue()
        self.held: Job | None = None  # taken from the queue but left for the next batch (it did not fit)
        self.pending = 0  # jobs submitted and not yet answered
        self.pending_work = 0  # their lines x beam
        self.work_per_second = 0.0  # lines x beam decoded a second lately (a moving average)
        self.lock = threading.Lock()
        self.closing = False  # stopping: no new job is taken; the queued ones until the grace ends
        self.shedding = False  # the grace has ended: nothing more is decoded but the batch under way
        self.thread = threading.Thread(target=self._work, name="seq2seq-model", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Answer everything already queued, then end the worker."""
        self.queue.put(None)
        self.thread.join()

    def close(self, grace: float) -> None:
        """Take no new job; decode the queued ones for `grace` seconds, then shed the rest."""
        self.closing = True
        timer = threading.Timer(grace, self.shed)
        timer.daemon = True
        timer.start()

    def shed(self) -> None:
        """Stop decoding anything new: every job not yet started is cancelled (its request is
        answered 503); the batch under way finishes."""
        self.shedding = True
        while True:
            try:
                job = self.queue.get_nowait()
            except queue.Empty:
                break
            if job is None:  # the stop sentinel stays for the worker
                self.queue.put(None)
                break
            job.future.cancel()
        if self.held is not None:
            self.held.future.cancel()

    def submit(self, job: Job) -> Future:
        job.future, job.arrived = Future(), time.monotonic()
        with self.lock:
            self.pending += 1
            self.pending_work += job.weight
        # the callback keeps the weight, not the job: a job holding its future and the future's
        # callback holding the job would be a cycle, and the answer in it (megabytes of maps for
        # /attention) would wait for Python's collector, in its slow generations, to be freed
        weight = job.weight
        job.future.add_done_callback(lambda _: self._answered(weight))
        self.queue.put(job)
        return job.future

    def _answered(self, weight: int) -> None:
        with self.lock:
            self.pending -= 1
            self.pending_work -= weight

    def seconds_for(self, work: int) -> float:
        """About how long `work` (lines x beam) takes at the rate seen lately."""
        rate = self.work_per_second or 10.0  # none seen yet: a slow CPU's pace
        return work / rate

    def _work(self) -> None:
        while True:
            jobs, stopping = self._collect()
            for group in _groups(jobs):
                self._run(group)
            if stopping:
                return

    def _collect(self) -> tuple[list[Job], bool]:
        """The next batch: the oldest job, then more until `max_batch` sentences or its deadline.
        True with it when the stop sentinel was reached (everything before it is in the batch)."""
        first = self.held or self._next()
        self.held = None
        if first is None:
            return [], True
        jobs, size = [first], len(first.lines)
        deadline = first.arrived + self.max_wait
        while size < self.max_batch:
            try:
                job = self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if job is None:
                return jobs, True
            if size + len(job.lines) > self.max_batch:
                self.held = job
                break
            jobs.append(job)
            size += len(job.lines)
        return jobs, False

    def _next(self) -> Job | None:
        """The next job from the queue. The process keeps freed memory for reuse while it works
        (allocator.py); once no request has come for IDLE_SECONDS, it gives it back to the system."""
        try:
            return self.queue.get(timeout=IDLE_SECONDS)
        except queue.Empty:
            release_freed_memory()
            return self.queue.get()

    def _run(self, jobs: list[Job]) -> None:
        """One model call for jobs of equal options; each job gets its own slice of the result
        (or the error, e.g. a beam above the vocabulary: the same for all of them)."""
        if self.shedding:
            for job in jobs:
                job.future.cancel()
        jobs = [job for job in jobs if job.future.set_running_or_notify_cancel()]  # a client that left
        if jobs:
            self._decode(jobs)

    def _decode(self, jobs: list[Job]) -> None:
        lines = [line for job in jobs for line in job.lines]
        options = replace(jobs[0].options, batch_size=self.max_batch)
        start = time.monotonic()
        try:
            if self.on_batch is not None:
                self.on_batch(jobs[0].work, len(lines))
            first = jobs[0]
            prefixes = None if first.prefixes is None else [p for job in jobs for p in job.prefixes]
            if first.work == "translate":  # one search, then each request finished as its own
                plans = [job.plan for job in jobs]
                found = self.translator.search(plans, self.max_batch)
                answers = [self.translator.finish(p, f) for p, f in zip(plans, found, strict=True)]
            elif first.work == "check":
                forced = [t for job in jobs for t in job.translations]
                answers = _split(
                    check_pairs(self.model, self.tokenizer, lines, forced, options.batch_size), jobs
                )
            else:
                forced = None if first.translations is None else [t for j in jobs for t in j.translations]
                asked = first.alternatives, first.trace
                maps = attention_batch(self.model, self.tokenizer, lines, forced, options, prefixes, *asked)
                answers = _split(maps, jobs)
        except Exception as e:  # the error goes to the requests that caused it; the worker lives on
            if len(jobs) == 1:
                jobs[0].future.set_exception(e)
            else:  # which of them? each alone, so one bad request cannot fail the others
                for job in jobs:
                    self._decode([job])
            return
        rate = len(lines) * options.rows / max(time.monotonic() - start, 1e-3)
        seen = self.work_per_second
        self.work_per_second = rate if not seen else 0.8 * seen + 0.2 * rate
        for job, answer in zip(jobs, answers, strict=True):
            job.future.set_result(answer)


def _groups(jobs: list[Job]) -> list[list[Job]]:
    """Jobs by equal key, in the order their first job arrived."""
    groups: dict[tuple, list[Job]] = {}
    for job in jobs:
        groups.setdefault(job.key(), []).append(job)
    return list(groups.values())


def _split(items: list, jobs: list[Job]) -> list[list]:
    out, start = [], 0
    for job in jobs:
        out.append(items[start : start + len(job.lines)])
        start += len(job.lines)
    return out
