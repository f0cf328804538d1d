"""The web face: a server-rendered Starlette app over the repositories (``kbwiki serve``).

``app`` builds the routes, ``markdown`` turns a page's Markdown into sanitised HTML with its wiki
links as links, ``ops`` guards the operations page's actions, ``metrics`` is the Prometheus
collector. It reads through ``repos.web`` only; no SQL lives here.
"""
