"""The import chunk's lean checking loop (`ImportIn.validate_fast`) accepts exactly what the model accepts,
with the same rows, and leaves everything else to the model (which explains the problem with its 422)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from outreach_core.imports.schemas import ImportIn
from tests.conftest import MakeWorkspace

_text = st.one_of(st.none(), st.text(max_size=70), st.integers(), st.booleans())
_custom_value = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.lists(st.integers(), max_size=1),
)
_row = st.dictionaries(
    st.sampled_from(
        [
            "email",
            "firstName",
            "lastName",
            "company",
            "phone",
            "country",
            "timezone",
            "first_name",
            "custom",
            "x",
        ]
    ),
    st.one_of(_text, st.dictionaries(st.text(max_size=66), _custom_value, max_size=3)),
    max_size=6,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(rows=st.lists(_row, max_size=4), extra=st.sampled_from([{}, {"final": True}, {"existing": "nope"}]))
def test_the_lean_loop_agrees_with_the_model(rows: list[dict[str, Any]], extra: dict[str, Any]) -> None:
    data = {"rows": rows, **extra}
    fast = ImportIn.validate_fast(data)
    try:
        model = ImportIn.model_validate(data)
    except ValidationError:
        assert fast is None  # refused by the model: never accepted by the loop
        return
    if fast is not None:  # the loop may leave a valid chunk to the model, never change what it holds
        assert fast.wire_rows() == model.wire_rows()
        assert fast.model_dump(exclude={"rows"}) == model.model_dump(exclude={"rows"})


@pytest.mark.parametrize(
    ("row", "path"),
    [
        ({"email": "a@example.com", "firstName": "x" * 201}, ["rows", 1, "firstName"]),
        ({"email": 5}, ["rows", 1, "email"]),
        ({"email": "a@example.com", "custom": {"k" * 65: 1}}, ["rows", 1, "custom", "k" * 65, "[key]"]),
    ],
)
async def test_a_bad_row_is_explained_with_its_path(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, row: dict[str, Any], path: list[Any]
) -> None:
    ws = await make_workspace(plan="growth")
    body = {"rows": [{"email": "fine@example.com"}, row], "final": True}
    response = await http.post("/api/v1/leads/import", headers=ws.headers, json=body)
    assert response.status_code == 422, response.text
    paths = [f["path"] for f in response.json()["error"]["details"]["fields"]]
    assert ".".join(str(p) for p in path) in paths, paths
    listed = await http.get("/api/v1/leads/imports", headers=ws.headers)
    assert listed.json()["imports"] == []  # nothing stored
