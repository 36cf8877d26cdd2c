"""Gradio's data-model schemas are built once (ui/schemas.py): what the page and the API describe is
unchanged, and each caller still gets a copy of its own (Gradio edits the schema it is given)."""
from __future__ import annotations

import json
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gradio.components.plot import PlotData  # noqa: E402
from gradio.data_classes import FileData, ListFiles  # noqa: E402
from gradio.state_holder import SessionState  # noqa: E402

from ui import layout  # noqa: E402
from ui.schemas import keep_schemas  # noqa: E402


def described(demo) -> str:
    """The page's config and a new session's view of every component, as the browser and
    gradio_client receive them."""
    session = SessionState(demo)
    return json.dumps([demo.get_config_file(), session.config_values], sort_keys=True, default=str)


def test_the_page_and_a_session_are_described_as_before():
    demo = layout.build()
    schemas = [m.model_json_schema() for m in (FileData, ListFiles, PlotData)]
    before = described(demo)
    keep_schemas()
    keep_schemas()                              # twice: still one layer
    assert [m.model_json_schema() for m in (FileData, ListFiles, PlotData)] == schemas
    assert described(demo) == before
    upload = next(b for b in demo.blocks.values() if type(b).__name__ == "UploadButton")
    assert upload.api_info() == FileData.model_json_schema() == schemas[0]


def test_each_caller_gets_its_own_copy():
    keep_schemas()
    first = FileData.model_json_schema()
    first.pop("description", None)              # as Component.api_info does
    first["properties"].clear()
    second = FileData.model_json_schema()
    assert second["properties"] and second != first
    assert FileData.model_json_schema(mode="serialization") == FileData.model_json_schema(mode="serialization")


def test_a_models_schema_is_built_once(monkeypatch):
    """From this session's review: the tests above pass without the cache too; this one counts the
    schema builds pydantic makes (three calls, one build)."""
    from gradio.data_classes import GradioModel
    from pydantic.json_schema import GenerateJsonSchema

    class Probe(GradioModel):
        text: str = ""

    builds = []
    generate = GenerateJsonSchema.generate
    monkeypatch.setattr(GenerateJsonSchema, "generate",
                        lambda self, *a, **k: builds.append(1) or generate(self, *a, **k))
    keep_schemas()
    schemas = [Probe.model_json_schema() for _ in range(3)]
    assert len(builds) == 1 and schemas[0] == schemas[2] and "text" in schemas[0]["properties"]
