"""What memdir checks before it keeps a memory: credentials (``secrets``), text that reads
as instructions to the model (``poisoning``) and who wrote it (``provenance``)."""
