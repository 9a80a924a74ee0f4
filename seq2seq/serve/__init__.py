"""`seq2seq serve`: the model over HTTP (FastAPI + uvicorn, the optional extra `.[serve]`).

    app.py      the FastAPI app: routes, request models, limits, errors as 4xx JSON
    batcher.py  dynamic batching: one worker thread runs the model on concurrent requests together
    server.py   uvicorn on a socket we bind ourselves, stopped gracefully by Ctrl-C or SIGTERM
    info.py     what /info says about the run, and the check that the extra is installed
    admission.py  what a request weighs, the queue's bound (503), deadlines (504), clients that leave
    lines.py    a request's lines checked (blank, line breaks, surrogates, lengths) before tokenizing
    chunked_json.py  a large JSON body written in small pieces off the event loop, sent as it is built
    connections.py  the h11 protocol with header/body/idle deadlines and a bound on connections
    logs.py     a repeated error logged once a minute
    guard.py    Host check, API key, security headers
    errors.py   the one-line JSON error
    limits.py   the defaults of the limits

Only app.py and errors.py import FastAPI (admission.py and guard.py take Starlette's request and
exception types), only server.py imports uvicorn.

May import: `seq2seq.views` (the explorer), `seq2seq.decoding`, `seq2seq.runs` (the run and its
description), `seq2seq.models`, `seq2seq.data` and the shared small modules.
"""
