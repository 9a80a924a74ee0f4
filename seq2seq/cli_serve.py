"""`seq2seq serve`: the run behind an HTTP API and the attention explorer (the extra `.[serve]`).
A plain function that `cli.py` registers on the app; like it, this layer alone prints or exits."""

from pathlib import Path

import typer

from seq2seq.cli_options import BEAM, DEVICE, load_decoder


def serve(
    run: Path = typer.Option(Path("runs/multi30k-en-fr"), "--run", help="Run directory."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every network)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free one, printed)."),
    beam: int = typer.Option(BEAM.default, "--beam", min=1, help="Beam size when a request gives none."),
    max_batch: int = typer.Option(64, "--max-batch", min=1, help="Sentences decoded together at most."),
    max_wait_ms: float = typer.Option(
        5.0, "--max-wait-ms", min=0.0, help="How long a request may wait for others to share its batch."
    ),
    device: str = DEVICE,
):
    """Serve a run over HTTP: POST /translate, POST /attention, GET /info, GET /health, and the
    attention explorer at / (API docs at /docs). Ctrl-C or SIGTERM answers what is in flight, then
    stops."""
    from seq2seq.serve.info import require

    require()
    from seq2seq.serve.app import create_app
    from seq2seq.serve.info import run_info
    from seq2seq.serve.server import listen
    from seq2seq.serve.server import serve as run_server

    sock = listen(host, port)  # a busy port fails before the run is loaded
    model, tokenizer = load_decoder(run, device)
    info = run_info(run, model, tokenizer)
    app = create_app(model, tokenizer, info, beam=beam, max_batch=max_batch, max_wait_ms=max_wait_ms)
    address = sock.getsockname()
    url = f"http://{address[0] if ':' not in address[0] else f'[{address[0]}]'}:{address[1]}"
    typer.echo(
        f"serving {run} ({info['architecture']} {info['src']}->{info['tgt']}, beam {beam}) at {url}  "
        f"explorer: {url}/  API docs: {url}/docs  (Ctrl-C stops)"
    )
    run_server(app, sock)
