"""The Multi30k download path, offline: a corpus in the raw layout served from 127.0.0.1 and read
through exactly the code that downloads the real one (SEQ2SEQ_MULTI30K_URL names the mirror)."""

import collections
import functools
import http.server
import threading

import pytest

from seq2seq.data.corpus import load_pairs
from seq2seq.errors import Seq2SeqError
from tests.cli_helpers import run_process
from tests.conftest import write_multi30k


class Mirror:
    """A static file server on a free local port that counts the requests it answers."""

    def __init__(self, folder):
        self.requests = collections.Counter()  # (method, path) -> count
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def send_head(self):
                mirror.requests[self.command, self.path] += 1
                return super().send_head()

            def log_message(self, *args):  # keep the test output clean
                pass

        handler = functools.partial(Handler, directory=str(folder))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/multi30k/raw"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def gets(self, name: str) -> int:
        return self.requests["GET", f"/multi30k/raw/{name}"]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """A private datasets cache (datasets reads its paths at import, so patch the module's)."""
    import datasets

    cache = tmp_path / "hf"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", cache / "downloads")
    monkeypatch.setattr(datasets.config, "EXTRACTED_DATASETS_PATH", cache / "downloads" / "extracted")
    monkeypatch.setenv("HF_HOME", str(cache))  # for the CLI's subprocess
    monkeypatch.delenv("SEQ2SEQ_DATA_DIR", raising=False)
    return cache


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    write_multi30k(tmp_path / "www" / "multi30k" / "raw", {"train": 80, "val": 8, "test_2016_flickr": 6})
    server = Mirror(tmp_path / "www")
    monkeypatch.setenv("SEQ2SEQ_MULTI30K_URL", server.url)
    yield server
    server.close()


def test_download_through_the_mirror_then_from_the_cache(mirror, hf_cache):
    pairs = load_pairs("multi30k", "train", "en", "fr")
    assert len(pairs) == 80 and pairs[1] == ("two men sit 1", "deux hommes assis 1")
    assert (mirror.gets("train.en.gz"), mirror.gets("train.fr.gz")) == (1, 1)
    requests = sum(mirror.requests.values())
    assert load_pairs("multi30k", "train", "en", "fr") == pairs
    assert sum(mirror.requests.values()) == requests, "the second run asked the server again"


def test_a_downloaded_corpus_loads_offline(mirror, hf_cache):
    pairs = load_pairs("multi30k", "val", "en", "fr")
    mirror.close()
    assert load_pairs("multi30k", "val", "en", "fr") == pairs


@pytest.mark.parametrize(
    "where,reason", [("missing file", "404"), ("nothing listening", "Cannot connect to host 127.0.0.1:9")]
)
def test_a_failed_download_names_the_url_and_the_offline_way(mirror, hf_cache, monkeypatch, where, reason):
    url = mirror.url + "/nowhere" if where == "missing file" else "http://127.0.0.1:9/raw"
    monkeypatch.setenv("SEQ2SEQ_MULTI30K_URL", url)
    with pytest.raises(Seq2SeqError) as error:
        load_pairs("multi30k", "val", "en", "fr")
    message = str(error.value)
    assert f"cannot download {url}/val.en.gz ({reason}" in message
    assert "--data-dir DIR" in message and "SEQ2SEQ_DATA_DIR" in message and "<split>.<lang>.gz" in message
    assert "\n" not in message


def test_train_from_a_clean_install_downloads_and_trains(mirror, hf_cache, tmp_path):
    run = tmp_path / "run"
    args = ["train", "--preset", "tiny", "--max-steps", "2", "--max-tokens", "256", "--vocab-size", "60"]
    result = run_process([*args, "--device", "cpu", "--run", run])
    assert result.code == 0, result.err
    assert (run / "model.safetensors").is_file()
    assert mirror.gets("train.en.gz") == 1 and mirror.gets("val.fr.gz") == 1
