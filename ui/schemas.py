"""Gradio's data-model schemas, made once.

Gradio describes each file component (upload and download buttons, files: the page has twenty) by
the JSON schema of its data model (``FileData``), which pydantic builds anew on every call. Gradio
asks for it three times per component when it makes a visitor's session, and again for each
component an event updates (a new threshold updates eight download buttons), on the server's event
loop. The UploadButton does not even keep its own (the other components keep theirs until an update
replaces them). Under bench/app_load.py's 50 visitors that was 9.6% of the time the server held the
GIL; a new session took 24 ms, 11 ms with the schemas kept.
"""
from __future__ import annotations

import copy


def keep_schemas() -> None:
    """Each Gradio data model's JSON schema built once (the default call only; a copy each time,
    since Gradio edits what it gets)."""
    from gradio.data_classes import GradioModel, GradioRootModel
    for base in (GradioModel, GradioRootModel):
        build = base.model_json_schema.__func__
        if getattr(build, "kept", False):
            continue

        def schema(cls, *args, _build=build, **kwargs):
            if args or kwargs:
                return _build(cls, *args, **kwargs)
            kept = cls.__dict__.get("_schema_kept")
            if kept is None:
                kept = _build(cls)
                type.__setattr__(cls, "_schema_kept", kept)     # (on the model class itself, not a subclass's)
            return copy.deepcopy(kept)
        schema.kept = True
        base.model_json_schema = classmethod(schema)
