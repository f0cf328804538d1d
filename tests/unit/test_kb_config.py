"""Changing a KB's own settings by dotted keys (``wiki.kb_config``): values read as JSON or text,
validated as a whole, unknown keys and refused values named, the API key masked when shown."""

from __future__ import annotations

import re

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
        (["ingest_batch_size=true"], "ingest_batch_size: Input should be a valid integer"),
        (['llm.extra_body={"a": NaN}'], "llm.extra_body: NaN and infinite numbers cannot be stored"),
        (['llm.thinking_off={"x": -Infinity}'], "llm.thinking_off: NaN and infinite numbers cannot be stored"),
        (['llm.extra_body={"a": 1e309}'], "llm.extra_body: NaN and infinite numbers cannot be stored"),
        (["llm.model=" + "m" * 5000], "llm.model: a value has at most 4,096 characters (got 5,000)"),
        (['llm.extra_body={"stop": "a\\u0000"}'], "llm.extra_body: a NUL character (\\u0000) cannot be stored"),
        (["llm.model=a\nb"], "llm.model: a value cannot contain a control character (\\n)"),
    ],
)
def test_a_refused_change_names_the_key_and_changes_nothing(sets, said):
    before = {"ingest_batch_size": 7}
    with pytest.raises(BadInput, match=re.escape(said)):
        changed(before, sets, [])
    assert before == {"ingest_batch_size": 7}


def test_shown_lists_keys_in_order_with_the_api_key_masked():
    lines = shown({"llm": {"api_key": "sk-secret-123456789", "model": "m"}, "ingest_batch_size": 9})
    assert lines == ["ingest_batch_size = 9", 'llm.model = "m"', 'llm.api_key = "****6789"']
    assert shown({"llm": {"api_key": "short"}}) == ['llm.api_key = "****"']
    assert shown({}) == []
    assert KEYS.index("llm.model") < KEYS.index("llm.api_key")


def test_a_key_both_set_and_unset_is_refused():
    with pytest.raises(BadInput, match="ingest_batch_size: both set and unset"):
        changed({}, ["ingest_batch_size=10"], ["ingest_batch_size"])


def test_a_refused_api_key_is_never_repeated_in_the_error():
    with pytest.raises(BadInput) as refused:
        changed({}, ["llm.api_key=123456789012345", "llm.max_tokens=1"], [])
    assert "123456789012345" not in str(refused.value) and "llm.api_key" in str(refused.value)
    with pytest.raises(BadInput) as refused:
        changed({}, ["sk-secret-pasted-without-a-key"], [])
    assert "pasted-without" not in str(refused.value)
