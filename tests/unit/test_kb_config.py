"""Changing a KB's own settings by dotted keys (``wiki.kb_config``): values read as JSON or text,
validated as a whole, unknown keys and refused values named, the API key masked when shown."""

from __future__ import annotations

import pytest

from wiki.errors import BadInput
from wiki.kb_config import KEYS, changed, shown


def test_set_reads_json_or_text_and_keeps_the_rest():
    stored = changed(
        {"link_defer_s": 5}, ["ingest_batch_size=50", "llm.model=qwen3", 'llm.extra_body={"temperature": 0}'], []
    )
    assert stored == {
        "ingest_batch_size": 50,
        "link_defer_s": 5.0,
        "llm": {"model": "qwen3", "extra_body": {"temperature": 0}},
    }


def test_unset_removes_a_key_and_an_emptied_llm_section():
    stored = changed({"ingest_batch_size": 50, "llm": {"model": "m"}}, [], ["llm.model", "link_defer_s"])
    assert stored == {"ingest_batch_size": 50}


def test_a_config_stored_under_the_old_key_name_is_rewritten_under_the_new_one():
    assert changed({"ingest_reduce_parallel": 3}, [], []) == {"crosslink_parallel": 3}


@pytest.mark.parametrize(
    ("sets", "said"),
    [
        (["batch=5"], "unknown key 'batch'"),
        (["llm.nope=1"], "unknown key 'llm.nope'"),
        (["ingest_batch_size"], "is not KEY=VALUE"),
        (["ingest_batch_size=0"], "ingest_batch_size: Input should be greater than or equal to 1 (got 0)"),
        (["llm.base_url=ftp://x"], "llm.base_url: String should match pattern"),
        (["llm.max_tokens=lots"], "llm.max_tokens: Input should be a valid integer"),
    ],
)
def test_a_refused_change_names_the_key_and_changes_nothing(sets, said):
    before = {"ingest_batch_size": 7}
    with pytest.raises(BadInput, match=said.replace("(", r"\(").replace(")", r"\)")):
        changed(before, sets, [])
    assert before == {"ingest_batch_size": 7}


def test_shown_lists_keys_in_order_with_the_api_key_masked():
    lines = shown({"llm": {"api_key": "sk-secret-123456789", "model": "m"}, "ingest_batch_size": 9})
    assert lines == ["ingest_batch_size = 9", 'llm.model = "m"', 'llm.api_key = "****6789"']
    assert shown({"llm": {"api_key": "short"}}) == ['llm.api_key = "****"']
    assert shown({}) == []
    assert KEYS.index("llm.model") < KEYS.index("llm.api_key")
