"""Every refusal is a named ``KbwikiError``; the command ends on each kind with one line and its
exit code; driver errors become ours where they are raised."""

from __future__ import annotations

import inspect

import click
import psycopg
import pytest
from click.testing import CliRunner

from kbwiki.command import EXIT_CODES, KbwikiGroup, click_error, exit_code
from repos.db import connection_lost
from repos.servers import check_database, check_redis
from wiki import errors

KINDS = [
    cls
    for _, cls in inspect.getmembers(errors, inspect.isclass)
    if issubclass(cls, Exception) and cls.__module__ == errors.__name__
]
#: The exit code each kind must end a command with: click's usage code for bad input, a shell's
#: 130 for a command the user stopped with Ctrl-C, else 1.
USAGE = (errors.BadInput,)


def _expected_code(kind: type) -> int:
    return 2 if issubclass(kind, USAGE) else 130 if issubclass(kind, errors.Interrupted) else 1


def test_every_error_class_is_a_kbwiki_error_and_has_an_exit_code():
    assert len(KINDS) > 15
    for kind in KINDS:
        assert issubclass(kind, errors.KbwikiError), kind
        assert exit_code(kind("x")) == _expected_code(kind)
    assert set(EXIT_CODES) <= set(KINDS)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_command_ends_on_each_kind_with_one_line_and_its_exit_code(kind):
    group = KbwikiGroup()

    @group.command()
    def refuse() -> None:
        raise kind(f"{kind.__name__} refused this")

    result = CliRunner().invoke(group, ["refuse"])
    assert result.exit_code == _expected_code(kind)
    # one line that carries the refusal's words (some kinds frame them: "invalid model output: ...");
    # a command the user stopped is no error: its line says what goes on, without "Error: "
    [line] = result.output.splitlines()
    assert line.startswith("Error: ") != issubclass(kind, errors.Interrupted)
    assert f"{kind.__name__} refused this" in line
    assert "Traceback" not in result.output


def test_a_subcommand_of_a_subgroup_is_mapped_too():
    group = KbwikiGroup()
    sub = click.Group("sub")
    group.add_command(sub)

    @sub.command()
    def gone() -> None:
        raise errors.UnknownKnowledgeBase("no knowledge base named 'x' for tenant 1")

    result = CliRunner().invoke(group, ["sub", "gone"])
    assert (result.exit_code, result.output) == (1, "Error: no knowledge base named 'x' for tenant 1\n")


def test_bad_document_keeps_its_reason():
    exc = errors.BadDocument("binary", "a.pdf")
    assert (exc.reason, exc.detail, str(exc)) == ("binary", "a.pdf", "binary: a.pdf")
    assert isinstance(exc, ValueError) and click_error(exc).exit_code == 2


def test_builtin_kinds_are_kept_for_callers_that_catch_them():
    assert issubclass(errors.BadInput, ValueError) and issubclass(errors.EmptyDedupKey, errors.BadInput)
    assert issubclass(errors.UnknownKnowledgeBase, LookupError)
    assert issubclass(errors.DatabaseUnreachable, errors.ServersUnreachable)
    assert not issubclass(errors.ExtractionUnavailable, errors.ExtractionError)  # for now is not for good


def test_fail_budget_and_error_cut():
    assert not errors.fail_budget_spent(5, 5) and errors.fail_budget_spent(6, 5)
    assert not errors.fail_budget_spent(None, 0)
    try:
        raise RuntimeError("x" * (3 * errors.ERROR_LIMIT_BYTES))
    except RuntimeError as exc:
        text = errors.error_text(exc)
    assert len(text) == errors.ERROR_LIMIT_BYTES and text.rstrip().endswith("x")


def test_unreachable_servers_are_named_errors():
    with pytest.raises(errors.DatabaseUnreachable) as caught:
        check_database("postgresql://nobody@127.0.0.1:1/x", timeout_s=1)
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    with pytest.raises(errors.RedisUnreachable):
        check_redis("redis://127.0.0.1:1/0", timeout_s=1)


@pytest.mark.parametrize(
    ("error", "lost"),
    [
        (psycopg.errors.IdleInTransactionSessionTimeout, True),  # an InternalError, yet the session is gone
        (psycopg.errors.TransactionTimeout, True),
        (psycopg.errors.IdleSessionTimeout, True),
        (psycopg.errors.AdminShutdown, True),
        (psycopg.errors.LockNotAvailable, False),  # the statement failed; its session goes on
        (psycopg.errors.QueryCanceled, False),
        (psycopg.errors.DeadlockDetected, False),
    ],
)
def test_a_session_the_server_ended_is_a_lost_connection_and_a_timed_out_statement_is_not(error, lost):
    assert connection_lost(error("from the server")) is lost


def test_an_error_text_opens_with_its_exception_line_whatever_the_traceback_length():
    def deep(n: int) -> None:
        if n == 0:
            raise ValueError("the model answered nothing\nraw answer follows")
        deep(n - 1)

    try:
        deep(300)  # a traceback far longer than the cut
    except ValueError as exc:
        text = errors.error_text(exc)
    assert text.splitlines()[0] == "ValueError: the model answered nothing"
    assert len(text) <= errors.ERROR_LIMIT_BYTES and "Traceback" not in text.splitlines()[0]
    assert text.rstrip().endswith("raw answer follows")
