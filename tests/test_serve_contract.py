"""Generated requests against the contract: schemathesis drives every route from the server's own
/openapi.json (bounded and seeded, to fit in CI): no 5xx, every answer's status and body as the
schema declares them, every error the one-line JSON error."""

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from tests.conftest import tiny_model, write_run
from tests.serve_helpers import live_server, make_app

# per operation and generation mode (valid and invalid requests): seconds in CI; a longer run
# locally with SEQ2SEQ_CONTRACT_EXAMPLES=2000
EXAMPLES = int(os.environ.get("SEQ2SEQ_CONTRACT_EXAMPLES", "50"))


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    run = write_run(tmp_path_factory.mktemp("contract"), lambda v: tiny_model(vocab_size=v, seed=10))
    with live_server(make_app(run, beam=2, max_lines=8, max_chars=200)) as url:
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_every_route_keeps_its_contract(case):
    response = case.call(timeout=60)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"} and isinstance(body["error"], str) and "\n" not in body["error"]
    # a schema-valid request may still be refused: the schema cannot say a line must not be blank,
    # nor that nbest is at most the beam, nor min_len at most max_len (422 says those)
    case.validate_response(response, excluded_checks=[positive_data_acceptance])
