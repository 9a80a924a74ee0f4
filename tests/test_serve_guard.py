"""Exposure is a choice: a server on loopback answers only requests addressed to this machine, an
API key guards every route but /health, every answer carries the headers a browser needs to keep
the page to itself, and /openapi.json documents the errors and limits the server enforces."""

import pytest
from fastapi.testclient import TestClient

from seq2seq.serve.guard import host_name, is_loopback
from tests.cli_helpers import run_cli
from tests.serve_helpers import make_app

KEY = "s3cret-key"


RUN_SEED = 8  # the `run` fixture's weights (conftest.py)


def one_line_error(response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert words in response.json()["error"] and "\n" not in response.json()["error"]


def test_names_of_this_machine():
    assert all(is_loopback(h) for h in ["localhost", "127.0.0.1", "127.8.9.1", "::1", "[::1]", "LOCALHOST"])
    assert not any(is_loopback(h) for h in ["evil.example", "10.0.0.1", "0.0.0.0", "localhost.evil.example"])
    assert [host_name(h) for h in ["a.b:80", "[::1]:8000", "::1", "localhost"]] == [
        "a.b",
        "::1",
        "::1",
        "localhost",
    ]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io", "10.1.2.3:80"])
def test_a_loopback_server_refuses_a_foreign_host(run, host):
    with TestClient(make_app(run, beam=2, loopback_only=True), base_url="http://localhost") as client:
        for path in ("/", "/info", "/translate"):
            response = client.request(
                "POST" if path == "/translate" else "GET",
                path,
                headers={"Host": host},
                json={"text": "a dog"},
            )
            one_line_error(response, 400, "is not this machine's")


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1:9", "[::1]:8000", "localhost"])
def test_a_loopback_server_answers_its_own_names(run, host):
    with TestClient(make_app(run, beam=2, loopback_only=True), base_url="http://localhost") as client:
        response = client.post("/translate", headers={"Host": host}, json={"text": "a dog"})
        assert response.status_code == 200, response.text


def test_an_api_key_guards_every_route_but_health(run):
    with TestClient(make_app(run, beam=2, api_key=KEY)) as client:
        assert client.get("/health").status_code == 200
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": KEY},
            {"Authorization": "Basic x"},
        ):
            for path in ("/", "/info", "/openapi.json", "/translate"):
                method = "POST" if path == "/translate" else "GET"
                response = client.request(method, path, headers=headers, json={"text": "a dog"})
                one_line_error(response, 401, "needs its API key")
                assert response.headers["www-authenticate"] == "Bearer"
        good = {"Authorization": f"Bearer {KEY}"}
        assert client.post("/translate", headers=good, json={"text": "a dog"}).status_code == 200
        assert client.get("/info", headers=good).status_code == 200


def test_every_answer_has_its_headers_and_the_page_its_policy(run):
    with TestClient(make_app(run, beam=2)) as client:
        page = client.get("/")
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "connect-src 'self'" in policy and "'unsafe" not in policy
        assert "script-src 'sha256-" in policy and "frame-ancestors 'none'" in policy
        for response in (page, client.post("/translate", json={"text": ""}), client.get("/health")):
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["x-frame-options"] == "DENY"
        head = client.head("/")
        assert head.status_code == 200 and head.content == b""


def test_cross_origin_reads_are_not_allowed(run):
    with TestClient(make_app(run, beam=2)) as client:
        origin = {"Origin": "http://evil.example"}
        preflight = client.options("/translate", headers={**origin, "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in preflight.headers
        response = client.post("/translate", headers=origin, json={"text": "a dog"})
        assert "access-control-allow-origin" not in response.headers


def test_openapi_documents_the_errors_and_the_limits(run):
    with TestClient(make_app(run, beam=2)) as client:
        spec = client.get("/openapi.json").json()
    assert "256 lines a request" in spec["info"]["description"]
    assert '{"error": "..."}' in spec["info"]["description"]
    for path in ("/translate", "/attention"):
        responses = spec["paths"][path]["post"]["responses"]
        assert {"400", "401", "413", "415", "422"} <= set(responses)
        for status in ("400", "413", "415", "422"):
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's {"detail": [...]}
    assert spec["components"]["schemas"]["ErrorBody"]["required"] == ["error"]


@pytest.mark.parametrize(
    "args,warned",
    [
        (["--host", "0.0.0.0"], "which has no authentication"),
        (["--host", "0.0.0.0", "--api-key", KEY], "each request needs the API key"),
        (["--host", "127.0.0.1"], None),
    ],
)
def test_binding_beyond_loopback_warns(run, capsys, monkeypatch, args, warned):
    served = []
    monkeypatch.setattr("seq2seq.serve.server.serve", lambda app, sock: served.append(app) or sock.close())
    result = run_cli(["serve", "--run", run, "--port", "0", *args], capsys, monkeypatch)
    assert result.code == 0 and len(served) == 1, result.err
    if warned:
        assert "anyone who can reach it may use this server" in result.err and warned in result.err
    else:
        assert "warning" not in result.err


def test_an_api_key_file_and_bad_keys(run, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr("seq2seq.serve.server.serve", lambda app, sock: sock.close())
    (tmp_path / "key").write_text(f"{KEY}\n")
    assert (
        run_cli(
            ["serve", "--run", run, "--port", "0", "--api-key-file", tmp_path / "key"], capsys, monkeypatch
        ).code
        == 0
    )
    (tmp_path / "empty").write_text("\n")
    for extra in (
        ["--api-key-file", tmp_path / "empty"],
        ["--api-key-file", tmp_path / "none"],
        ["--api-key", KEY, "--api-key-file", tmp_path / "key"],
    ):
        result = run_cli(["serve", "--run", run, "--port", "0", *extra], capsys, monkeypatch)
        assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err


def test_an_inline_key_loses_its_spaces_and_an_empty_environment_key_is_refused(run, capsys, monkeypatch):
    """A key with spaces at its ends is the key without them, as a key file's is: no Authorization
    header can carry them. An empty SEQ2SEQ_API_KEY is refused as `--api-key ""` is, not taken for
    no key at all (an open server)."""
    from seq2seq.cli.serve import api_key_of

    assert api_key_of(f" {KEY} ", None) == KEY
    monkeypatch.setenv("SEQ2SEQ_API_KEY", "")
    served = []
    monkeypatch.setattr("seq2seq.serve.server.serve", lambda app, sock: served.append(sock.close()))
    result = run_cli(["serve", "--run", run, "--port", "0"], capsys, monkeypatch)
    assert result.code == 2 and "SEQ2SEQ_API_KEY is set but empty" in result.err and not served
    assert len(result.err.strip().splitlines()) == 1, result.err
