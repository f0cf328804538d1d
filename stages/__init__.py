"""Stage functions: one stage of the pipeline each, orchestrated over repositories and the
extractor, testable without a broker.

Every stage entry point takes one context, ``stages.deps.Deps`` (repositories, Redis client,
extractor, settings, worker id), after the ids it works on: ``reduce_step(tenant_id,
knowledge_base_id, deps)``. The actors (``actors/``) pass the process-wide one (``get_deps()``);
commands, benchmarks and tests build their own (``build_deps``) and change a field with
``dataclasses.replace``. Small helpers that touch one or two repositories name them as keyword
arguments. Stages import repos/ and wiki/ only; a stage that sends a message names its actor
(``stages.triggers``).
"""
