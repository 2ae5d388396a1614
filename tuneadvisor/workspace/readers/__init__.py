"""The readers of ``workspace/gather.py``: one module per input (``base.py`` says what a reader
is, ``registry.py`` lists them in order)."""
