"""The read API under ``/api/v1`` of ``kbwiki serve`` (:func:`kbwiki.api.app.create_api`)."""
