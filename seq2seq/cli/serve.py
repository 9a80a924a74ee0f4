"""`seq2seq serve`: the run behind an HTTP API and the attention explorer (the extra `.[serve]`)."""

import os
from pathlib import Path

import typer

from seq2seq.cli.options import BEAM, DEVICE, RUN, run_dir


def serve(
    run: Path | None = RUN,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every network)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free one, printed)."),
    beam: int = typer.Option(BEAM.default, "--beam", min=1, help="Beam size when a request gives none."),
    max_batch: int = typer.Option(64, "--max-batch", min=1, help="Sentences decoded together at most."),
    max_wait_ms: float = typer.Option(
        5.0,
        "--max-wait-ms",
        min=0.0,
        max=10_000.0,
        help="How long a request may wait for others to share its batch.",
    ),
    device: str = DEVICE,
    threads: int | None = typer.Option(
        None, "--threads", min=1, help="CPU threads for the model [default: every core but one, at least 1]."
    ),
):
    """Serve a run over HTTP: POST /translate, POST /attention, GET /info, GET /health, and the
    attention explorer at / (API docs at /docs). Ctrl-C or SIGTERM answers what is in flight, then
    stops."""
    from seq2seq.serve.info import require

    require()
    import torch

    from seq2seq.serve.app import create_app
    from seq2seq.serve.info import run_info
    from seq2seq.serve.server import listen
    from seq2seq.serve.server import serve as run_server
    from seq2seq.training.checkpoint import load_run

    # One core is left to the HTTP side (parsing, JSON, the event loop): on 2 cores with 32 clients
    # the model on 1 thread serves 147 sentences/s, on 2 threads 121 (scripts/bench_serve.py).
    torch.set_num_threads(threads or max(1, (os.cpu_count() or 2) - 1))
    run = run_dir(run)
    sock = listen(host, port)  # a busy port fails before the run is loaded
    model, tokenizer = load_run(run, device, packed=True)
    info = run_info(run, model, tokenizer)
    app = create_app(model, tokenizer, info, beam=beam, max_batch=max_batch, max_wait_ms=max_wait_ms)
    address = sock.getsockname()
    url = f"http://{address[0] if ':' not in address[0] else f'[{address[0]}]'}:{address[1]}"
    typer.echo(
        f"serving {run} ({info['architecture']} {info['src']}->{info['tgt']}, beam {beam}) at {url}  "
        f"explorer: {url}/  API docs: {url}/docs  (Ctrl-C stops)"
    )
    run_server(app, sock)
