"""Model-facing code, all optional: the chat model behind a small protocol (``chat``),
the checks on text a model wrote (``checks``) and the summaries it writes (``summaries``)."""
