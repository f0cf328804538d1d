"""LLM settings: the process settings, a KB's override, the fingerprint that un-pauses a KB, and
the pieces of the extractor that need no server (sections, Retry-After, the answer schema)."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest
from pydantic import ValidationError

from wiki.extract.llm.client import retry_after_s
from wiki.extract.llm.extractor import normalise, sections
from wiki.extract.llm.schema import answer_schema
from wiki.llm_config import LLMOverride, config_from_settings
from wiki.models import WikiConfig
from wiki.settings import Settings


def test_settings_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("KBWIKI_LLM_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("KBWIKI_LLM_EXTRA_BODY", '{"temperature": 0}')
    monkeypatch.setenv("KBWIKI_LLM_MAX_TOKENS", "2048")
    config = config_from_settings(Settings())
    assert config.base_url == "http://127.0.0.1:8080/v1" and config.extra_body == {"temperature": 0}
    assert config.max_tokens == 2048 and config.thinking_off == {"chat_template_kwargs": {"enable_thinking": False}}
    monkeypatch.setenv("KBWIKI_LLM_MAX_TOKENS", "10")
    with pytest.raises(ValidationError):
        Settings()


def test_a_kb_override_is_validated_and_changes_the_fingerprint():
    base = config_from_settings(Settings(llm_model="m1", llm_api_key="secret"))
    kb = WikiConfig.model_validate({"llm": {"model": "m2"}})
    assert base.with_override(kb.llm).model == "m2" and base.with_override(None) is base
    assert base.with_override(kb.llm).fingerprint() != base.fingerprint()
    assert base.with_override(LLMOverride(api_key="other")).fingerprint() != base.fingerprint()
    assert base.with_override(LLMOverride()).fingerprint() == base.fingerprint()
    assert "secret" not in base.fingerprint()
    with pytest.raises(ValidationError):
        WikiConfig.model_validate({"llm": {"modle": "typo"}})


def test_sections_cut_at_paragraphs_within_the_budget():
    text = "\n\n".join(f"Paragraph {i} " + "word " * 50 for i in range(20))
    parts = sections(text, 1000)
    assert len(parts) > 1 and all(len(p) <= 1000 for p in parts)
    assert normalise(" ".join(parts)) == normalise(text)
    assert sections("short", 1000) == ["short"]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"retry-after": "3"}, 3.0), ({"retry-after-ms": "1500"}, 1.5), ({}, None), ({"retry-after": "soon"}, None)],
)
def test_retry_after_is_read_from_the_response(headers, expected):
    request = httpx2.Request("POST", "http://x/v1/chat/completions")
    exc = openai.RateLimitError("slow down", response=httpx2.Response(429, headers=headers, request=request), body=None)
    assert retry_after_s(exc) == expected


def test_the_answer_schema_is_strict_everywhere():
    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    found = list(objects(answer_schema()))
    assert len(found) == 3
    assert all(o["additionalProperties"] is False and set(o["required"]) == set(o["properties"]) for o in found)


def _nodes(node, kind):
    if isinstance(node, dict):
        if node.get("type") == kind:
            yield node
        for value in node.values():
            yield from _nodes(value, kind)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value, kind)


def test_a_bounded_schema_bounds_every_string_and_list_and_the_default_none():
    bounded = answer_schema(True)
    strings, lists = list(_nodes(bounded, "string")), list(_nodes(bounded, "array"))
    assert strings and all(0 < s["maxLength"] <= 300 for s in strings if "enum" not in s)
    assert lists and all(0 < a["maxItems"] <= 4 for a in lists)
    plain = answer_schema()
    assert not any("maxLength" in s for s in _nodes(plain, "string"))
    assert not any("maxItems" in a for a in _nodes(plain, "array"))


def test_a_bounded_schema_is_a_cache_key_of_its_own():
    from wiki.extract.llm import LLMExtractor
    from wiki.llm_config import LLMConfig

    plain, bounded = LLMExtractor(LLMConfig()), LLMExtractor(LLMConfig(bounded_schema=True))
    assert plain.name_for("json_schema") != bounded.name_for("json_schema")
    assert "bounded" in bounded.name_for("json_schema")


def test_a_base_url_that_is_no_http_url_is_refused_where_it_is_set():
    import pydantic

    from wiki.llm_config import LLMOverride
    from wiki.settings import Settings

    with pytest.raises(pydantic.ValidationError):
        Settings(llm_base_url="not-a-url")
    with pytest.raises(pydantic.ValidationError):
        LLMOverride(base_url="ftp://example/v1")
    assert Settings(llm_base_url="http://127.0.0.1:8080/v1").llm_base_url.endswith("/v1")


def test_the_shared_rate_limit_settings_reach_the_config_and_stay_out_of_its_fingerprint():
    from wiki.llm_config import LLMConfig

    config = config_from_settings(Settings(llm_max_concurrency=4, llm_rpm=500, llm_tpm=90_000))
    assert (config.max_concurrency, config.rpm, config.tpm) == (4, 500, 90_000)
    assert LLMConfig().max_concurrency == 16 and LLMConfig().rpm == 0 and LLMConfig().tpm == 0
    slower = config.with_override(LLMOverride(rpm=10, max_concurrency=1))
    assert (slower.max_concurrency, slower.rpm) == (1, 10)
    assert slower.fingerprint() == config.fingerprint()  # pace changes do not resume a paused KB
    assert config.with_override(LLMOverride(model="other")).fingerprint() != config.fingerprint()


def test_the_model_extractor_gets_map_slots_of_its_own():
    # bench/llm_pipeline.py: with 6 slots per KB at most 6 calls were ever in flight against a model
    # that allowed 8, and a slot spends part of each document off the model.
    from wiki.models import KnowledgeBase
    from wiki.settings import kb_tunables

    kb = KnowledgeBase(id="kb", tenant_id=1, name="kb")
    assert kb_tunables(Settings(extractor="offline"), kb).map_parallel == 16
    assert kb_tunables(Settings(extractor="llm"), kb).map_parallel == 12
    assert kb_tunables(Settings(extractor="llm", ingest_llm_map_parallel=20), kb).map_parallel == 20
    own = kb.model_copy(update={"wiki_config": WikiConfig(ingest_map_parallel=3)})
    assert kb_tunables(Settings(extractor="llm"), own).map_parallel == 3  # a KB's own setting wins


def test_a_price_is_known_only_when_both_are_set_and_finite_and_a_model_is_named():
    # new-user trial: half a price was shown as the whole, "inf" gave "$inf", an empty model passed
    from pydantic import ValidationError

    from wiki.llm_config import LLMConfig, estimated_usd

    assert estimated_usd(LLMConfig(price_in_per_mtok=0.15), 1_000_000, 1_000_000) is None
    assert estimated_usd(LLMConfig(price_in_per_mtok=0.15, price_out_per_mtok=0.6), 1_000_000, 1_000_000) == 0.75
    for bad in ({"llm_price_in_per_mtok": float("inf")}, {"llm_model": ""}):
        with pytest.raises(ValidationError):
            Settings(**bad)


def test_the_lead_schema_is_bounded_with_the_answer_schema():
    from wiki.extract.llm.leads import MAX_LEAD_CHARS, PAGES_PER_CALL
    from wiki.extract.llm.schema import lead_schema

    loose, bounded = lead_schema(), lead_schema(True)
    assert "maxLength" not in json.dumps(loose) and "maxItems" not in json.dumps(loose)
    leads = bounded["properties"]["leads"]
    assert leads["maxItems"] == PAGES_PER_CALL
    lead = bounded["$defs"]["LeadOut"]["properties"] if "$defs" in bounded else leads["items"]["properties"]
    assert lead["lead"]["maxLength"] == MAX_LEAD_CHARS and lead["page"]["maxLength"] == 8
