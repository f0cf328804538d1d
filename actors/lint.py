"""The ``wiki_lint`` actor: lint a KB (``stages.lint.run_lint``), optionally fixing what can be fixed."""

from __future__ import annotations

import structlog

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from stages.deps import get_deps
from stages.lint import run_lint

log = structlog.get_logger(__name__)


class LintArgs(KbArgs):
    """``wiki_lint``: the KB, and whether to fix what can be fixed."""

    fix: bool = False


@actor(max_retries=3, time_limit=3_600_000, throws=BAD_MESSAGE)
def wiki_lint(**kwargs) -> None:
    """Lint a KB (``fix`` to mend what can be mended) and store the report as its latest."""
    args = LintArgs.model_validate(kwargs)
    deps = get_deps()
    report = run_lint(
        args.tenant_id,
        args.knowledge_base_id,
        deps,
        fix=args.fix,
    )
    log.info(
        "lint.done",
        knowledge_base_id=args.knowledge_base_id,
        pages=report.pages_checked,
        score=report.score,
        counts=report.counts,
        fixed=report.fixed,
        duration_ms=report.duration_ms,
    )
