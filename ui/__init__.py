"""The Gradio Space's user interface, as a package a newcomer can change one part of.

- ``state``: requests, sources, the result cache and the download files (no Gradio widgets);
- ``views``: everything that turns data into HTML, Markdown, tables or Plotly figures; the one
  place where values from the data are escaped;
- ``handlers``: pure functions from form values (and the cached result) to view data, keyed by
  the names of the page's parts; testable without a browser or a server;
- ``api``: the named endpoints for scripts (audit_json, leak_json, dedup_file);
- ``layout``: the page itself, and the wiring of events to handlers.

No analysis happens here: handlers call the ``auditor`` library's public API.

The Space's entry point (app.py) sets the environment gradio and huggingface_hub read at import
before it imports this package; importing ``ui`` itself changes no environment variable.
"""
