"""The typed messages that travel between finq's stages (version 1), one module per kind:

- `base`: the base model and the limits of a client's text;
- `tool_results`: tool calls and their facts, passages and errors;
- `understanding`: what the router understood of a question;
- `questions`: a question and the route decided for it;
- `answers`: the tools' results, the drafted and the validated answer;
- `documents`: an upload for the ingest stage;
- `failures`: a stage's failure of a request;
- `events`: what each stage decided, as it happens (for POST /v1/ask/stream);
- `envelope`: the envelope around every message.

One envelope carries the request's identity, attempt and deadline around a typed payload;
each hop has its own payload model. Fields are only ever added with defaults; a breaking
change gets new models under a new subject version.
"""
