"""`gpuscout probe`: first-hand measurements of fine-tuning steps on the GPU at hand.

Models come from `config.json` files with random weights (no download); each grid point runs
warm-up and timed optimizer steps on packed fixed-length batches and records tokens/s and the
CUDA allocator's peaks, in the columns of the sizing measurements file (`rows.py`). The card's
achieved bf16 matmul rate and copy bandwidth come with them (`card.py`).

PyTorch, transformers and peft are the optional `probe` extra: `grid.py`, `rows.py` and
`compare.py` import none of them, and the modules that do are imported only when a probe runs.
"""
