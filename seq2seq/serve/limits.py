"""What one server takes on, by default: the defaults of `create_app` and of `seq2seq serve`'s
options (no web framework imported here, so the command line reads them without the extra)."""

MAX_LINES = 256  # lines in one request
MAX_CHARS = 1000  # characters in one line (the model reads at most max_positions pieces anyway)
MAX_BEAM = 64  # a beam is memory: K hypotheses x the vocabulary at every step
MAX_WORK = 1 << 17  # lines x beam x output pieces in one request: 256 captions at beam 5, 10 times over
MAX_QUEUE = 2048  # lines x beam waiting or decoding: on 2 cores seconds of work, not minutes
REQUEST_TIMEOUT = 60.0  # seconds a request may wait for its answer (504 after)
MAX_BODY = 2 << 20  # bytes: room for MAX_LINES x MAX_CHARS of any script, JSON-escaped
