"""Stage functions: one stage of the pipeline each, orchestrated over repositories and the
extractor, testable without a broker.

A stage names in its signature, as keyword arguments, the repositories and clients it uses
(``ops: TaskPendingOpsRepository``, ``pages: WikiPageRepository``, ``redis``, ``settings``...);
the actors (``actors/``) fetch the process-wide ``actors.deps.Deps`` and pass those fields. Stages
import repos/ and wiki/ only; a stage that sends a message names its actor (``stages.triggers``).
"""
