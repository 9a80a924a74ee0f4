"""`seq2seq serve`: the run behind an HTTP API and the attention explorer (the extra `.[serve]`)."""

import os
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import DEVICE, RUN, run_dir
from seq2seq.decoding.options import DecodeOptions
from seq2seq.errors import Seq2SeqError
from seq2seq.serve.limits import MAX_QUEUE, REQUEST_TIMEOUT


def serve(
    run: Path | None = RUN,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every network)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free one, printed)."),
    beam: int = typer.Option(
        DecodeOptions.beam, "--beam", min=1, help="Beam size when a request gives none."
    ),
    max_batch: int = typer.Option(64, "--max-batch", min=1, help="Sentences decoded together at most."),
    max_wait_ms: float = typer.Option(
        5.0,
        "--max-wait-ms",
        min=0.0,
        max=10_000.0,
        help="How long a request may wait for others to share its batch.",
    ),
    max_queue: int = typer.Option(
        MAX_QUEUE,
        "--max-queue",
        min=1,
        help="Work queued or decoding at most, lines x beam (503 past it).",
    ),
    request_timeout: float = typer.Option(
        REQUEST_TIMEOUT,
        "--request-timeout",
        min=0.1,
        max=86_400.0,
        help="Seconds a request may wait (504 past it).",
    ),
    device: str = DEVICE,
    threads: int | None = typer.Option(
        None, "--threads", min=1, help="CPU threads for the model [default: every core but one, at least 1]."
    ),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="SEQ2SEQ_API_KEY",
        help="Every route but /health needs Authorization: Bearer KEY [default: none needed].",
    ),
    api_key_file: Path | None = typer.Option(
        None, "--api-key-file", help="The API key in a file (kept out of the process list)."
    ),
):
    """Serve a run over HTTP: POST /translate, POST /attention, GET /info, GET /health, and the
    attention explorer at / (API docs at /docs). Ctrl-C or SIGTERM answers what is in flight, then
    stops."""
    from seq2seq.serve.guard import is_loopback
    from seq2seq.serve.info import require

    require()
    key, loopback = api_key_of(api_key, api_key_file), is_loopback(host)
    if not loopback:
        display.warn(
            f"listening on {host}: anyone who can reach it may use this server"
            + ("; each request needs the API key" if key else ", which has no authentication (see --api-key)")
        )
    import torch

    from seq2seq.runs.load import load_run
    from seq2seq.serve.app import create_app
    from seq2seq.serve.info import run_info
    from seq2seq.serve.server import listen
    from seq2seq.serve.server import serve as run_server

    # One core is left to the HTTP side (parsing, JSON, the event loop): on 2 cores with 32 clients
    # the model on 1 thread serves 147 sentences/s, on 2 threads 121 (scripts/bench_serve.py).
    torch.set_num_threads(threads or max(1, (os.cpu_count() or 2) - 1))
    run = run_dir(run)
    sock = listen(host, port)  # a busy port fails before the run is loaded
    model, tokenizer = load_run(run, device, packed=True)
    info = run_info(run, model, tokenizer)
    app = create_app(
        model,
        tokenizer,
        info,
        beam=beam,
        max_batch=max_batch,
        max_wait_ms=max_wait_ms,
        api_key=key,
        loopback_only=loopback,
        max_queue=max_queue,
        request_timeout=request_timeout,
    )
    address = sock.getsockname()
    url = f"http://{address[0] if ':' not in address[0] else f'[{address[0]}]'}:{address[1]}"
    typer.echo(
        f"serving {run} ({info['architecture']} {info['src']}->{info['tgt']}, beam {beam}) at {url}  "
        f"explorer: {url}/  API docs: {url}/docs  (Ctrl-C stops)"
    )
    run_server(app, sock)


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
