"""The edge's one table of HTTP statuses: every outcome code has one, nothing else does,
and the services' outcomes carry codes only."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from beamweaver_core.protocol.launch import REFUSAL_STATUS
from beamweaver_core.runtime.answers import ACCEPTED, APPROVAL_RECORDED, REFUSALS
from reviews.http_statuses import HTTP_STATUS, http_status
from reviews.outcomes import DONE, Code, Outcome

ROOT = Path(__file__).resolve().parents[2]


def test_every_outcome_code_has_exactly_the_documented_status() -> None:
    assert dict(HTTP_STATUS) == {
        "accepted": 200,
        "approval_recorded": 202,
        "claim_taken": 200,
        "unclaimed": 200,
        "reassigned": 200,
        "extended": 200,
        "cancelled": 200,
        "not_found": 404,
        "key_reused": 422,
        "already_decided": 409,
        "gone": 410,
        "not_allowed": 403,
        "self_approval": 403,
        "claimed": 409,
        "quorum": 409,
        "stale": 409,
        "payload_changed": 409,
        "already_approved": 409,
        "invalid": 422,
        "busy": 409,
        "question_pending": 409,
        "no_active_run": 409,
        "not_cancellable": 409,
    }
    assert set(HTTP_STATUS) == set(Code)


def test_carried_out_codes_are_2xx_and_refusals_4xx() -> None:
    for code in Code:
        status = http_status(Outcome(code, "m"))
        assert (200 <= status < 300) == (code in DONE), code
        assert status < 300 or 400 <= status < 500, code


@pytest.mark.parametrize("code", ["conflict", "", "ACCEPTED", "http_409"])
def test_an_unknown_code_fails_loudly(code: str) -> None:
    with pytest.raises(LookupError, match=f"No HTTP status for the outcome code {code!r}"):
        http_status(code)


def test_an_outcome_has_no_http_status_of_its_own() -> None:
    fields = {f.name for f in dataclasses.fields(Outcome)}

    assert "status" not in fields and "status_code" not in fields
    assert Outcome(Code.ACCEPTED, "m").to_dict() == {
        "code": "accepted",
        "message": "m",
        "replayed": False,
    }


def test_the_protocol_maps_every_refusal_the_answer_service_can_give() -> None:
    # The protocol cannot import `reviews` (it sits beside it above the runtime), so it
    # keeps its own table over the answer service's codes; both vocabularies agree.
    assert set(REFUSAL_STATUS) == REFUSALS
    assert REFUSALS | {ACCEPTED, APPROVAL_RECORDED} <= set(Code)
    assert all(400 <= status < 500 for status in REFUSAL_STATUS.values())


def test_no_template_branches_on_an_http_status() -> None:
    templates = [
        *ROOT.glob("templates/**/*.html"),
        *ROOT.glob("reviews/templates/**/*.html"),
        *ROOT.glob("beamweaver_core/templates/**/*.html"),
    ]
    status_test = re.compile(r"(==|!=|\bin)\s*\(?\s*[1-5]\d\d\b|status_code")

    assert templates
    assert [
        f"{path.relative_to(ROOT)}:{n}"
        for path in templates
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "{%" in line and status_test.search(line)
    ] == []
