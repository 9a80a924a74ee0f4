"""`seq2seq serve`: the run behind an HTTP API and the attention explorer (the extra `.[serve]`)."""

import os
from dataclasses import dataclass
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import DEVICE, RUN, fields, run_dir
from seq2seq.decoding.options import DecodeOptions
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import option
from seq2seq.serve.limits import MAX_QUEUE, REQUEST_TIMEOUT


@dataclass
class ServeArgs:
    """`serve`'s own options (beside --run and --device)."""

    host: str = option("127.0.0.1", "Address to listen on (0.0.0.0: every network).")
    port: int = option(8000, "Port (0: any free one, printed).", 0, 65535)
    beam: int = option(DecodeOptions.beam, "Beam size when a request gives none.", 1, None)
    max_batch: int = option(64, "Sentences decoded together at most.", 1, None)
    max_wait_ms: float = option(
        5.0, "How long a request may wait for others to share its batch.", 0.0, 10_000.0
    )
    max_queue: int = option(
        MAX_QUEUE, "Work queued or decoding at most, lines x beam (503 past it).", 1, None
    )
    request_timeout: float = option(
        REQUEST_TIMEOUT, "Seconds a request may wait (504 past it).", 0.1, 86_400.0
    )
    threads: int | None = option(
        None, "CPU threads for the model [default: every core but one, at least 1].", 1, None
    )
    api_key: str | None = option(
        None,
        "Every route but /health needs Authorization: Bearer KEY [default: none needed].",
        envvar="SEQ2SEQ_API_KEY",
    )
    api_key_file: Path | None = option(None, "The API key in a file (kept out of the process list).")


LIMITS = ("beam", "max_batch", "max_wait_ms", "max_queue", "request_timeout")  # ServeArgs create_app takes


def serve(run: Path | None = RUN, device: str = DEVICE, args: ServeArgs = fields(ServeArgs)):
    """Serve a run over HTTP: POST /translate, POST /attention, GET /info, GET /health, and the
    attention explorer at / (API docs at /docs). Ctrl-C or SIGTERM answers what is in flight, then
    stops."""
    from seq2seq.serve.guard import is_loopback
    from seq2seq.serve.info import require

    require()
    key, loopback = api_key_of(args.api_key, args.api_key_file), is_loopback(args.host)
    if not loopback:
        display.warn(
            f"listening on {args.host}: anyone who can reach it may use this server"
            + ("; each request needs the API key" if key else ", which has no authentication (see --api-key)")
        )
    import torch

    from seq2seq.alignment.runs import placing_method
    from seq2seq.runs.load import load_run
    from seq2seq.serve.app import create_app
    from seq2seq.serve.info import run_info
    from seq2seq.serve.server import listen
    from seq2seq.serve.server import serve as run_server
    from seq2seq.trust.calibration import Calibration

    # One core is left to the HTTP side (parsing, JSON, the event loop): on 2 cores with 32 clients
    # the model on 1 thread serves 147 sentences/s, on 2 threads 121 (scripts/bench_serve.py).
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 2) - 1))
    run = run_dir(run)
    sock = listen(args.host, args.port)  # a busy port fails before the run is loaded
    model, tokenizer = load_run(run, device, packed=True)
    info = run_info(run, model, tokenizer)
    limits = {name: getattr(args, name) for name in LIMITS}
    limits["calibration"] = Calibration.of_run(run)  # the trust flags: the run's own, if fitted
    limits["markup"] = placing_method(run, model, tokenizer)  # tags placed as translate places them
    app = create_app(model, tokenizer, info, api_key=key, loopback_only=loopback, **limits)
    announce(sock, run, info, args.beam)
    run_server(app, sock)


def announce(sock, run: Path, info: dict, beam: int) -> None:
    """Where the server listens (the port chosen, for --port 0), and what it serves."""
    address = sock.getsockname()
    url = f"http://{address[0] if ':' not in address[0] else f'[{address[0]}]'}:{address[1]}"
    typer.echo(
        f"serving {run} ({info['architecture']} {info['src']}->{info['tgt']}, beam {beam}) at {url}  "
        f"explorer: {url}/  API docs: {url}/docs  (Ctrl-C stops)"
    )


def api_key_of(key: str | None, path: Path | None) -> str | None:
    """The API key given inline, by SEQ2SEQ_API_KEY or in a file (its first line), without the
    spaces at its ends (no Authorization header carries them); refused when empty (an empty
    SEQ2SEQ_API_KEY too: it would start an open server) or given twice."""
    if not key and path is None and os.environ.get("SEQ2SEQ_API_KEY") == "":
        raise Seq2SeqError(
            "SEQ2SEQ_API_KEY is set but empty: give it a key, or unset it to serve without one"
        )
    if key is not None and path is not None:
        raise typer.BadParameter("give --api-key or --api-key-file, not both", param_hint="--api-key")
    if path is not None:
        try:
            key = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise Seq2SeqError(
                f"cannot read the API key from {path}: {getattr(e, 'strerror', None) or e}"
            ) from None
    key = key.strip() if key is not None else None
    if key is not None and (not key or not key.isprintable() or not key.isascii()):
        raise Seq2SeqError("the API key must be printable ASCII, and not empty")
    return key
